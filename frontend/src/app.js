// Small behaviours every page may use. Pages work without them; they only help.

// <form data-confirm="Delete x?">: ask before submitting.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);

// <div data-show-when="kind=human">: shown only while the form's field `kind` has that
// value (several values: kind=a|b). Without JavaScript every part stays visible.
function fieldValue(form, name) {
  const checked = form.querySelector(`[name="${name}"]:checked`);
  if (checked) return checked.value;
  const field = form.elements.namedItem(name);
  return field && "value" in field ? field.value : "";
}

function updateConditional(root) {
  root.querySelectorAll("[data-show-when]").forEach((element) => {
    const form = element.closest("form");
    if (!form) return;
    const [name, values] = element.dataset.showWhen.split("=");
    element.hidden = !values.split("|").includes(fieldValue(form, name));
  });
}

document.addEventListener("change", (event) => {
  const form = event.target.closest && event.target.closest("form");
  if (form) updateConditional(form);
});
document.addEventListener("DOMContentLoaded", () => updateConditional(document));
document.addEventListener("htmx:load", (event) => updateConditional(event.target));

// <button data-dismiss="tr">: remove the enclosing element (an inline form's row).
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("[data-dismiss]");
  if (!button) return;
  const target = button.closest(button.dataset.dismiss);
  if (target) target.remove();
});
