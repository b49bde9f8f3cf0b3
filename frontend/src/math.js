// TeX in Markdown statements, typeset with KaTeX. The server leaves each formula as
// text inside <span class="arithmatex">\( … \)</span> (inline) or
// <div class="arithmatex">\[ … \]</div> (display), safe to show as it is without
// JavaScript; here it becomes typeset math, also in fragments htmx swaps in.
import katex from "katex";

const DELIMITERS = /^\\[([]([\s\S]*)\\[\])]$/;

function typeset(root) {
  root.querySelectorAll(".arithmatex:not([data-typeset])").forEach((element) => {
    const match = element.textContent.trim().match(DELIMITERS);
    if (!match) return;
    const display = element.tagName === "DIV";
    try {
      katex.render(match[1], element, { displayMode: display, throwOnError: false });
      element.dataset.typeset = "true";
    } catch (error) {
      element.dataset.typeset = "failed";  // the TeX stays readable as text
    }
  });
}

document.addEventListener("DOMContentLoaded", () => typeset(document));
document.addEventListener("htmx:afterSwap", (event) => typeset(event.target));
