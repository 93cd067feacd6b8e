// Larik's page helpers, installed once per document as window.__larik in Larik's isolated
// world (the page's DOM, not its JavaScript). The snapshot walks the visible DOM, open
// shadow roots included, and outlines headings, text and interactive elements; each
// interactive element keeps its ref for the document's life (shown as a data-larik-ref
// attribute), so later snapshots give it the same one. find() looks a ref up wherever the
// element is, in the document or a shadow root.
(() => {
  if (window.__larik) return;
  const REF = 'data-larik-ref';
  const ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'textbox', 'searchbox',
    'combobox', 'listbox', 'option', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab',
    'switch', 'slider', 'spinbutton', 'treeitem']);
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK']);
  const BLOCKS = new Set(['UL', 'OL', 'FORM', 'DIALOG', 'NAV', 'MAIN', 'SECTION', 'ARTICLE',
    'ASIDE', 'HEADER', 'FOOTER', 'TABLE', 'FIELDSET']);
  let next = 1;
  // Refs live here, in Larik's isolated world: the attribute only shows them, so a page
  // that copies or moves one cannot redirect a click.
  const byName = new Map();
  const names = new WeakMap();

  const clean = (text, most) => {
    const flat = (text || '').replace(/\s+/g, ' ').trim();
    return flat.length > most ? flat.slice(0, most - 1) + '…' : flat;
  };
  const quote = (text) => JSON.stringify(text);

  function interactive(el) {
    const tag = el.tagName;
    if (tag === 'A') return el.hasAttribute('href');
    if (tag === 'INPUT') return el.type !== 'hidden';
    if (tag === 'BUTTON' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'SUMMARY') return true;
    const role = el.getAttribute('role');
    if (role && ROLES.has(role)) return true;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return true;
    return el.hasAttribute('onclick');
  }

  // Hidden by its style: nothing inside shows either. A container without a size of its
  // own (floats, absolutely placed children) may still show what it holds.
  function hidden(el) {
    const style = getComputedStyle(el);
    return style.display === 'none' || style.visibility === 'hidden' ||
      style.visibility === 'collapse' || parseFloat(style.opacity) === 0;
  }

  function visible(el) {
    if (hidden(el)) return false;
    const rect = el.getBoundingClientRect();
    return rect.width > 0 && rect.height > 0;
  }

  function ref(el) {
    let name = names.get(el);
    if (!name) {
      name = 'e' + next++;
      names.set(el, name);
      byName.set(name, new WeakRef(el));
    }
    if (el.getAttribute(REF) !== name) el.setAttribute(REF, name);
    return name;
  }

  function roleOf(el) {
    const role = el.getAttribute('role');
    if (role && ROLES.has(role)) return role;
    const tag = el.tagName;
    if (tag === 'A') return 'link';
    if (tag === 'SELECT') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'TEXTAREA') return 'textbox';
    if (tag === 'SUMMARY') return 'button';
    if (tag === 'INPUT') {
      const type = el.type;
      if (type === 'checkbox' || type === 'radio') return type;
      if (type === 'submit' || type === 'button' || type === 'reset' || type === 'image') return 'button';
      if (type === 'range') return 'slider';
      if (type === 'number') return 'spinbutton';
      if (type === 'search') return 'searchbox';
      return 'textbox';
    }
    if (tag === 'BUTTON') return 'button';
    if (el.isContentEditable) return 'textbox';
    return 'clickable';
  }

  function labelOf(el) {
    const aria = el.getAttribute('aria-label');
    if (aria) return clean(aria, 80);
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const root = el.getRootNode();
      const text = by.split(/\s+/).map((id) => {
        const target = root.getElementById ? root.getElementById(id) : document.getElementById(id);
        return target ? target.textContent : '';
      }).join(' ');
      if (clean(text, 80)) return clean(text, 80);
    }
    if (el.labels && el.labels.length) return clean(el.labels[0].textContent, 80);
    if (el.tagName === 'INPUT' && (el.type === 'submit' || el.type === 'button' || el.type === 'reset')) {
      return clean(el.value, 80);
    }
    const own = clean(el.innerText || el.textContent, 80);
    if (own && el.tagName !== 'SELECT' && el.tagName !== 'TEXTAREA') return own;
    return clean(el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('alt') || el.getAttribute('name') || '', 80);
  }

  function describe(el) {
    const role = roleOf(el);
    let line = role;
    const label = labelOf(el);
    if (label) line += ' ' + quote(label);
    const tag = el.tagName;
    if (tag === 'A') {
      const href = el.getAttribute('href');
      if (href && !href.startsWith('javascript:')) line += ' → ' + href;
    }
    if (tag === 'INPUT' || tag === 'TEXTAREA') {
      if (el.type === 'checkbox' || el.type === 'radio') {
        if (el.checked) line += ' checked';
      } else if (el.type === 'password') {
        if (el.value) line += ' value=(hidden)';
      } else if (el.value && role !== 'button') {
        line += ' value=' + quote(clean(el.value, 120));
      }
    }
    if (tag === 'SELECT') {
      const chosen = Array.from(el.selectedOptions).map((option) => clean(option.label || option.text, 60));
      if (chosen.length) line += ' selected=' + quote(chosen.join(', '));
      const options = Array.from(el.options).slice(0, 30).map((option) => clean(option.label || option.text, 40));
      line += ' options=' + quote(options.join(' | '));
    }
    if (el.disabled) line += ' disabled';
    if (el.getAttribute('aria-expanded')) line += ' expanded=' + el.getAttribute('aria-expanded');
    return line + ' [ref=' + ref(el) + ']';
  }

  function walk(node, depth, out) {
    for (let child = node.firstChild; child; child = child.nextSibling) {
      if (out.full) return;
      if (child.nodeType === Node.TEXT_NODE) {
        const text = clean(child.textContent, 300);
        if (text) out.push(depth, text);
        continue;
      }
      if (child.nodeType !== Node.ELEMENT_NODE) continue;
      const el = child;
      if (SKIP.has(el.tagName) || hidden(el)) continue;
      const heading = /^H([1-6])$/.exec(el.tagName);
      if (heading) {
        const text = clean(el.innerText || el.textContent, 200);
        if (text) out.push(depth, '#'.repeat(Number(heading[1])) + ' ' + text);
        // Links and buttons inside a heading still get their refs.
        el.querySelectorAll('a[href],button').forEach((inner) => {
          if (visible(inner)) out.push(depth + 1, describe(inner));
        });
        continue;
      }
      if (interactive(el)) {
        if (!visible(el)) continue;
        out.push(depth, describe(el));
        if (el.tagName === 'SELECT' || el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') continue;
        // A clickable container may hold more controls.
        if (el.querySelector('a[href],button,input,select,textarea,[role]')) walk(el, depth + 1, out);
        if (el.shadowRoot) walk(el.shadowRoot, depth + 1, out);
        continue;
      }
      if (el.tagName === 'IMG') {
        const alt = clean(el.getAttribute('alt'), 80);
        if (alt) out.push(depth, 'image ' + quote(alt));
        continue;
      }
      if (el.tagName === 'IFRAME') {
        out.push(depth, 'iframe' + (el.title ? ' ' + quote(clean(el.title, 60)) : ''));
        continue;
      }
      const block = BLOCKS.has(el.tagName);
      if (block) out.push(depth, el.tagName.toLowerCase() + ':');
      const inner = block ? depth + 1 : depth;
      if (el.shadowRoot) walk(el.shadowRoot, inner, out);
      walk(el, inner, out);
    }
  }

  function collector(limit) {
    const lines = [];
    let size = 0;
    return {
      lines,
      full: false,
      push(depth, text) {
        if (this.full) return;
        const line = '  '.repeat(depth) + text;
        if (size + line.length + 1 > limit) {
          this.full = true;
          return;
        }
        const last = lines[lines.length - 1];
        if (last === line) return;
        lines.push(line);
        size += line.length + 1;
      },
    };
  }

  // Any element with a ref, in the document or a shadow root, while it is in the page.
  function find(name) {
    const held = byName.get(String(name));
    const el = held && held.deref();
    return el && el.isConnected ? el : null;
  }

  // The element at a point, looked for inside shadow roots too.
  function deepAt(x, y) {
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  }

  // Whether `inner` is `el` or inside it, across shadow roots.
  function within(inner, el) {
    for (let node = inner; node; node = node.parentNode || node.host) {
      if (node === el) return true;
    }
    return false;
  }

  function snapshot(rootRef, limit) {
    const out = collector(limit);
    let root = document.body || document.documentElement;
    if (rootRef) {
      root = find(rootRef);
      if (!root) return { error: 'no element has ref ' + rootRef + ' in this document' };
      if (interactive(root)) out.push(0, describe(root));
    }
    if (root) {
      if (root.shadowRoot) walk(root.shadowRoot, 0, out);
      walk(root, 0, out);
    }
    return { title: document.title, url: location.href, text: out.lines.join('\n'), cut: out.full };
  }

  function deepActive() {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el;
  }

  function centre(name) {
    const el = find(name);
    if (!el) return { error: 'no element has ref ' + name + ' in this document; take a new snapshot' };
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0) return { error: 'the element ' + name + ' is not visible' };
    const x = rect.left + rect.width / 2;
    const y = rect.top + rect.height / 2;
    const hit = deepAt(x, y);
    if (hit && !within(hit, el)) {
      return { error: 'the element ' + name + ' is covered by ' + hit.tagName.toLowerCase() +
        (clean(hit.innerText, 60) ? ' ' + quote(clean(hit.innerText, 60)) : '') + '; close or scroll past it first' };
    }
    return { x, y };
  }

  function focusAndClear(name) {
    const el = find(name);
    if (!el) return { error: 'no element has ref ' + name + ' in this document; take a new snapshot' };
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    el.focus();
    if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
      // The native setter, so frameworks that track the value see the change.
      const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, '');
      el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    } else if (el.isContentEditable) {
      const range = document.createRange();
      range.selectNodeContents(el);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      document.execCommand('delete');
    } else {
      return { error: 'the element ' + name + ' does not take text' };
    }
    return { focused: deepActive() === el };
  }

  function select(name, wanted) {
    const el = find(name);
    if (!el) return { error: 'no element has ref ' + name + ' in this document; take a new snapshot' };
    if (!(el instanceof HTMLSelectElement)) return { error: 'the element ' + name + ' is not a select' };
    const chosen = [];
    const missing = [];
    for (const want of wanted) {
      const option = Array.from(el.options).find((o) => o.value === want || clean(o.label || o.text, 200) === want);
      if (option) chosen.push(option);
      else missing.push(want);
    }
    if (missing.length) {
      return { error: 'no option ' + missing.map(quote).join(', ') + '; options: ' + Array.from(el.options).map((o) => quote(clean(o.label || o.text, 60))).join(', ') };
    }
    if (!el.multiple && chosen.length > 1) return { error: 'the select takes one option' };
    for (const option of el.options) option.selected = chosen.includes(option);
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { selected: chosen.map((o) => clean(o.label || o.text, 60)) };
  }

  function box(name) {
    const el = find(name);
    if (!el) return { error: 'no element has ref ' + name + ' in this document; take a new snapshot' };
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const rect = el.getBoundingClientRect();
    return { x: rect.left + scrollX, y: rect.top + scrollY, width: rect.width, height: rect.height };
  }

  function label() {
    unlabel();
    const layer = document.createElement('div');
    layer.id = '__larik_labels';
    layer.style.cssText = 'position:absolute;left:0;top:0;width:0;height:0;z-index:2147483647;pointer-events:none;';
    const all = [];
    for (const name of byName.keys()) {
      const el = find(name);
      if (el) all.push(el);
    }
    let shown = 0;
    for (const el of all) {
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 || rect.bottom < 0 || rect.right < 0 || rect.top > innerHeight || rect.left > innerWidth) continue;
      const outline = document.createElement('div');
      outline.style.cssText = 'position:absolute;box-sizing:border-box;border:2px dashed #e8590c;' +
        'left:' + (rect.left + scrollX) + 'px;top:' + (rect.top + scrollY) + 'px;width:' + rect.width + 'px;height:' + rect.height + 'px;';
      const tag = document.createElement('div');
      tag.textContent = names.get(el);
      tag.style.cssText = 'position:absolute;background:#e8590c;color:#fff;font:bold 11px monospace;padding:0 3px;' +
        'left:' + (rect.left + scrollX) + 'px;top:' + Math.max(0, rect.top + scrollY - 14) + 'px;';
      layer.append(outline, tag);
      shown++;
    }
    document.documentElement.append(layer);
    return { shown };
  }

  function unlabel() {
    const layer = document.getElementById('__larik_labels');
    if (layer) layer.remove();
  }

  window.__larik = { snapshot, find, centre, focusAndClear, select, box, label, unlabel, deepActive };
  window.__larikFind = find;
})();
