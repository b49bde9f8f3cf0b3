// The code editor: CodeMirror 6 on top of a plain <textarea data-editor>. The textarea
// stays the form field (kept in sync), so saving is an ordinary form post and the page
// works without JavaScript.
import { Compartment, EditorState } from "@codemirror/state";
import {
  EditorView, crosshairCursor, drawSelection, dropCursor, highlightActiveLine,
  highlightActiveLineGutter, highlightSpecialChars, keymap, lineNumbers, placeholder,
  rectangularSelection,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  StreamLanguage, bracketMatching, defaultHighlightStyle, foldGutter, foldKeymap,
  indentOnInput, indentUnit, syntaxHighlighting,
} from "@codemirror/language";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { python } from "@codemirror/lang-python";
import { cpp } from "@codemirror/lang-cpp";
import { markdown } from "@codemirror/lang-markdown";
import { toml } from "@codemirror/legacy-modes/mode/toml";

const LANGUAGES = {
  python: () => python(),
  cpp: () => cpp(),
  cuda: () => cpp(), // CUDA C++: the C++ grammar covers its syntax
  markdown: () => markdown(),
  toml: () => StreamLanguage.define(toml),
};

const EXTENSIONS = {
  ".py": "python", ".md": "markdown", ".toml": "toml", ".cu": "cuda", ".cuh": "cuda",
  ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".c": "cpp", ".h": "cpp", ".hpp": "cpp",
};

export function languageFor(path) {
  const match = /\.[^./]+$/.exec(path || "");
  return match ? EXTENSIONS[match[0].toLowerCase()] || "" : "";
}

const theme = EditorView.theme({
  "&": { fontSize: "13px", border: "1px solid var(--border-strong)", borderRadius: "6px" },
  "&.cm-focused": { outline: "2px solid var(--accent-soft)", borderColor: "var(--accent)" },
  ".cm-scroller": { fontFamily: "var(--font-mono)", lineHeight: "1.5" },
  ".cm-gutters": { background: "var(--surface-sunken)", borderRight: "1px solid var(--border)" },
  ".cm-content, .cm-gutter": { minHeight: "var(--editor-min-height, 18rem)" },
});

function mount(textarea) {
  if (textarea.dataset.editorMounted) return;
  textarea.dataset.editorMounted = "true";
  const language = new Compartment();
  const pick = (name) => (LANGUAGES[name] ? LANGUAGES[name]() : []);
  const sync = EditorView.updateListener.of((update) => {
    if (!update.docChanged) return;
    textarea.value = update.state.doc.toString();
    // htmx (live preview) and the unsaved-changes marker listen for this.
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
  });
  const save = keymap.of([{
    key: "Mod-s",
    preventDefault: true,
    run: () => { if (textarea.form) textarea.form.requestSubmit(); return true; },
  }]);
  const view = new EditorView({
    parent: textarea.parentElement,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(),
        foldGutter(), drawSelection(), dropCursor(), EditorState.allowMultipleSelections.of(true),
        indentOnInput(), syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        bracketMatching(), rectangularSelection(), crosshairCursor(), highlightActiveLine(),
        highlightSelectionMatches(), indentUnit.of("    "),
        keymap.of([...defaultKeymap, ...searchKeymap, ...historyKeymap, ...foldKeymap, indentWithTab]),
        save, sync, theme, EditorView.lineWrapping,
        EditorState.readOnly.of(textarea.readOnly),
        EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") || "Code editor" }),
        language.of(pick(textarea.dataset.language || languageFor(textarea.dataset.path))),
        textarea.placeholder ? placeholder(textarea.placeholder) : [],
      ],
    }),
  });
  const rows = Number(textarea.getAttribute("rows")) || 12;
  view.dom.style.setProperty("--editor-min-height", `${rows * 1.5}em`);
  textarea.insertAdjacentElement("afterend", view.dom);
  textarea.hidden = true;
  textarea.editorView = view;

  // A new file's language follows the path typed beside it.
  const pathField = textarea.form && textarea.form.elements.namedItem("path");
  if (pathField && pathField.type === "text") {
    pathField.addEventListener("input", () => {
      view.dispatch({ effects: language.reconfigure(pick(languageFor(pathField.value))) });
    });
  }
  markUnsaved(textarea);
}

function markUnsaved(textarea) {
  const form = textarea.form;
  if (!form || form.dataset.unsavedWatch) return;
  form.dataset.unsavedWatch = "true";
  let dirty = false;
  form.addEventListener("input", () => {
    dirty = true;
    form.classList.add("is-dirty");
  });
  form.addEventListener("submit", () => { dirty = false; });
  window.addEventListener("beforeunload", (event) => {
    if (dirty) event.preventDefault();
  });
}

function mountAll(root) {
  root.querySelectorAll("textarea[data-editor]").forEach(mount);
}

document.addEventListener("DOMContentLoaded", () => mountAll(document));
document.addEventListener("htmx:load", (event) => mountAll(event.target));
