// Review screens: keyboard shortcuts and comments anchored to code lines.
// Plain script, no build step; every page still works without it.
(function () {
  "use strict";

  function typing(target) {
    const tag = target && target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable ||
      (tag === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(target.type));
  }

  // Criteria (fieldsets with data-criterion that take a choice) in page order.
  function questions(form) {
    return Array.from(form.querySelectorAll("fieldset[data-criterion]"))
      .filter((fieldset) => fieldset.querySelector("input[data-level]"));
  }

  function focusQuestion(form, index) {
    const all = questions(form);
    if (!all.length) return;
    const next = all[Math.max(0, Math.min(all.length - 1, index))];
    all.forEach((fieldset) => fieldset.classList.remove("is-current"));
    next.classList.add("is-current");
    next.scrollIntoView({ block: "nearest" });
    form.dataset.current = String(all.indexOf(next));
  }

  function currentIndex(form) {
    return form.dataset.current === undefined ? -1 : Number(form.dataset.current);
  }

  function chooseLevel(form, number) {
    const all = questions(form);
    let index = currentIndex(form);
    if (index < 0) {
      index = 0;
      focusQuestion(form, 0);
    }
    const input = all[index] && all[index].querySelector(`input[data-level="${number}"]`);
    if (!input) return;
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    if (index + 1 < all.length) focusQuestion(form, index + 1);
  }

  function chooseDecision(form, value) {
    const input = form.querySelector(`input[data-decision="${value}"]`);
    if (input) input.checked = true;
  }

  function submit(form) {
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  }

  function onKey(event) {
    const form = document.querySelector("form[data-review-form]");
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      if (form) {
        event.preventDefault();
        submit(form);
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const shortcut = document.querySelector(`[data-shortcut="${event.key}"]`);
    if (shortcut) {
      event.preventDefault();
      shortcut.click();
      return;
    }
    if (!form) return;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      focusQuestion(form, currentIndex(form) + (event.key === "j" ? 1 : -1));
    } else if (/^[1-9]$/.test(event.key)) {
      event.preventDefault();
      chooseLevel(form, event.key);
    } else if (event.key === "a" || event.key === "r" || event.key === "f") {
      const value = { a: "accept", r: "reject", f: "needs_fix" }[event.key];
      if (form.querySelector(`input[data-decision="${value}"]`)) {
        event.preventDefault();
        chooseDecision(form, value);
      }
    }
  }

  // A click on a line number opens a comment box under that line. Its fields
  // belong to the review form through the form attribute, wherever they sit.
  function openComment(button) {
    const row = button.closest("tr");
    const existing = row.nextElementSibling;
    if (existing && existing.classList.contains("comment-form-row")) {
      existing.querySelector("textarea").focus();
      return;
    }
    const path = button.dataset.commentPath;
    const line = button.dataset.commentLine;
    const box = document.createElement("tr");
    box.className = "comment-form-row";
    const id = `lc-${Math.random().toString(36).slice(2)}`;
    box.innerHTML =
      '<td></td><td><div class="line-comment-form">' +
      '<input type="hidden" name="lc-path" form="review-form">' +
      '<input type="hidden" name="lc-line" form="review-form">' +
      `<label class="comment-meta" for="${id}"></label>` +
      `<textarea id="${id}" name="lc-body" rows="2" form="review-form"></textarea>` +
      "</div></td>";
    box.querySelector('input[name="lc-path"]').value = path;
    box.querySelector('input[name="lc-line"]').value = line;
    box.querySelector("label").textContent = `Comment on ${path}, line ${line}`;
    row.after(box);
    box.querySelector("textarea").focus();
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-comment-path]");
    if (button) openComment(button);
    const fieldset = event.target.closest("fieldset[data-criterion]");
    const form = fieldset && fieldset.closest("form[data-review-form]");
    const index = form ? questions(form).indexOf(fieldset) : -1;
    if (index >= 0) focusQuestion(form, index);
  });
})();
