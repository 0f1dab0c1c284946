// Shared by kafkalab's widgets (put in front of each widget's own script, see kafkalab.notebook.widget.esm):
// h(tag, {class, text, onclick, data-...}, ...children) builds one element.

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

