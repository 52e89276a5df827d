// Signature help: inside a call's parentheses, a tooltip shows the function's parameters (from
// jedi in the page's Python) with the current one highlighted.
import { StateEffect, StateField } from "@codemirror/state";
import { EditorView, showTooltip, keymap } from "@codemirror/view";

const setSig = StateEffect.define();

const sigField = StateField.define({
  create: () => null,
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setSig)) return e.value;
    if (value && tr.docChanged) return { ...value, pos: tr.changes.mapPos(value.pos) };
    return value;
  },
  provide: (f) =>
    showTooltip.from(f, (v) =>
      v
        ? {
            pos: v.pos,
            above: true,
            strictSide: false,
            create: () => {
              const dom = document.createElement("div");
              dom.className = "cm-signature";
              for (const s of v.sigs) {
                const line = document.createElement("div");
                line.append(document.createTextNode(`${s.name}(`));
                s.params.forEach((p, i) => {
                  if (i) line.append(document.createTextNode(", "));
                  const span = document.createElement(i === s.index ? "strong" : "span");
                  span.textContent = p;
                  line.append(span);
                });
                line.append(document.createTextNode(")"));
                dom.append(line);
                if (s.doc) {
                  const doc = document.createElement("div");
                  doc.className = "cm-signature-doc";
                  doc.textContent = s.doc;
                  dom.append(doc);
                }
              }
              return { dom };
            },
          }
        : null,
    ),
});

export function signatureHelp(py) {
  let timer = null;
  let seq = 0;
  const listener = EditorView.updateListener.of((u) => {
    if (!u.docChanged && !u.selectionSet) return;
    clearTimeout(timer);
    const view = u.view;
    timer = setTimeout(async () => {
      if (!py.editorReady) return;
      const mine = ++seq;
      const state = view.state;
      const pos = state.selection.main.head;
      const line = state.doc.lineAt(pos);
      const sigs = await py.ask("signature", { code: state.doc.toString(), line: line.number, col: pos - line.from }, 5000);
      if (mine !== seq || view.state.selection.main.head !== pos) return;
      const current = view.state.field(sigField);
      if (sigs && sigs.length) view.dispatch({ effects: setSig.of({ pos, sigs }) });
      else if (current) view.dispatch({ effects: setSig.of(null) });
    }, 250);
  });
  const escape = keymap.of([
    {
      key: "Escape",
      run: (view) => {
        if (!view.state.field(sigField)) return false;
        view.dispatch({ effects: setSig.of(null) });
        return true;
      },
    },
  ]);
  return [sigField, listener, escape];
}
