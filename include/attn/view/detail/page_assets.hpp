#pragma once
// The attention page's style, markup and script (attn/view/attention_page.hpp), kept here as
// raw string literals so that an installed library writes the page with no extra files.
// The script reads its data from <script id="attn-data"> and uses only standard DOM and
// canvas APIs. It is split into parts below 16 KB each, the longest string literal some
// compilers accept.

namespace attn::detail {

inline constexpr const char* page_style = R"CSS(
:root { --ink: #222; --muted: #666; --line: #ddd; --select: #fff1a8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #fff; }
header { padding: 8px 16px; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: baseline; }
h1 { font-size: 17px; margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 14px; margin: 12px 0 4px; }
nav button { font: inherit; padding: 3px 10px; border: 1px solid #bbb; background: #f6f6f6; border-radius: 4px; cursor: pointer; }
nav button.active { background: #0072b2; color: #fff; border-color: #0072b2; }
#layout { display: flex; align-items: flex-start; }
main { flex: 1 1 auto; padding: 8px 16px; min-width: 0; }
aside { flex: 0 0 260px; padding: 8px 16px; border-left: 1px solid var(--line); min-height: 60vh; }
.view { display: none; }
.view.active { display: block; }
.hint, #window-note, .legend-text { color: var(--muted); font-size: 12px; }
#grid { display: grid; gap: 10px; }
figure { margin: 0; cursor: pointer; border: 2px solid transparent; padding: 2px; border-radius: 4px; }
figure:hover { border-color: #999; }
figure.open { border-color: #d55e00; }
figcaption { font-size: 12px; font-weight: 600; text-align: center; }
figure canvas { display: block; image-rendering: pixelated; }
.controls { margin: 4px 0 8px; display: flex; flex-wrap: wrap; gap: 6px 16px; align-items: center; }
.chip { display: inline-flex; align-items: center; gap: 4px; padding: 1px 6px; border: 1px solid var(--line); border-radius: 10px; cursor: pointer; }
.chip.open { border-color: #222; font-weight: 600; }
.swatch { width: 12px; height: 12px; border-radius: 2px; display: inline-block; }
#head-area { display: flex; align-items: flex-start; }
.tokens { font: 12px/18px ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre; }
.tokens div { height: 18px; padding: 0 6px; border-radius: 3px; cursor: default; }
#queries div { text-align: right; }
.tokens .emphasis { color: #0072b2; }
.tokens .marker { color: #555; font-style: italic; background: #eee; }
.tokens .future { color: #bbb; background: none; }
.tokens .outside { color: #a0896a; background: #fbe6c8; font-style: italic; }
.tokens .selected { background: var(--select); font-weight: 700; }
.tokens .top { outline: 2px solid var(--head-colour, #d55e00); outline-offset: -2px; font-weight: 700; }
.tokens .predicted { text-decoration: underline dashed #cc79a7; text-underline-offset: 3px; }
#lines { display: block; }
#readout { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; min-height: 18px; margin-bottom: 4px; }
#matrix { display: block; image-rendering: pixelated; }
.bar { display: flex; align-items: center; gap: 6px; font: 12px ui-monospace, "DejaVu Sans Mono", monospace; margin: 2px 0; }
.bar span.fill { display: inline-block; height: 10px; background: #0072b2; }
.bar span.label { flex: 0 0 120px; overflow: hidden; text-overflow: ellipsis; }
ol { padding-left: 22px; margin: 0; font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
#error { color: #b00; white-space: pre-wrap; }
)CSS";

inline constexpr const char* page_body = R"HTML(<header>
<h1 id="title"></h1>
<nav id="tabs"><button data-view="model">Model view</button> <button data-view="head">Head view</button> <button data-view="matrix">Matrix view</button></nav>
<div>position <b id="position-index"></b>: <span id="position-token"></span> · open head <b id="open-label"></b> · arrow keys move the position</div>
</header>
<div id="error"></div>
<div id="layout">
<main>
<section id="view-model" class="view">
<p class="hint">Every layer (rows) and head (columns); in each, rows attend to columns and the diagonal runs top left to bottom right. Click a head to open it.</p>
<div id="grid"></div>
</section>
<section id="view-head" class="view">
<div class="controls"><label>layer <select id="layer-select"></select></label><span id="head-toggles"></span><span id="window-note"></span></div>
<p class="hint">Hover a token on the left: lines go to the keys it attends to, one colour per head; the open head's top keys are outlined; dashed: the most probable next token.</p>
<div id="head-area"><div id="queries" class="tokens"></div><canvas id="lines"></canvas><div id="keys" class="tokens"></div></div>
</section>
<section id="view-matrix" class="view">
<div class="controls"><label>head <select id="head-select"></select></label><label><input type="checkbox" id="baseline"> compare with the even spread (weight − 1/(keys visible to the row))</label></div>
<div id="readout">&nbsp;</div>
<canvas id="matrix"></canvas>
<div class="legend-text" id="legend"></div>
</section>
</main>
<aside>
<h2>Next token at this position</h2><div id="next"></div>
<h2>Top keys of the open head</h2><ol id="top-keys"></ol>
</aside>
</div>
)HTML";

inline constexpr const char* page_script[] = {R"JS((function () {
'use strict';
const started = performance.now();
const $ = (id) => document.getElementById(id);
const data = JSON.parse($('attn-data').textContent);
const n = data.positions, layers = data.layers, heads = data.heads, lower = data.storage === 'lower';
const perHead = lower ? n * (n + 1) / 2 : n * n;
// A sliding layer's row i sees keys i − w + 1 … i only: the keys before are unreachable, shown
// in their own colour, never as zero attention.
const windows = data.windows || new Array(layers).fill(0);
const firstVisible = (l, i) => (windows[l] > 0 ? Math.max(0, i - windows[l] + 1) : 0);
const outside = (l, i, j) => j < firstVisible(l, i);
const visibleCount = (l, i) => visible(i) - firstVisible(l, i);
const TOP = 5, WINDOW = 256, ROW = 18;
const OKABE_ITO = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#f0e442', '#000000'];
const headColour = (h) => OKABE_ITO[h % OKABE_ITO.length];
const label = (l, h) => 'L' + (l + 1) + 'H' + (h + 1);

// The base64 of one of data's byte fields as bytes.
function bytesOf(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; ++i) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
// One chunk of entropy-coded 8-bit codes (attention_page.hpp, detail::encode_codes): 136 bytes
// of 4-bit code lengths, then canonical Huffman codes, most significant bit first; symbols
// 0-255 are codes, 256 + k a run of 2^(k+1) zeros.
const LONGEST = 12;
function decodeCodes(bytes, begin, end, count) {
  const length = new Uint8Array(272);
  for (let b = 0; b < 136; ++b) { length[2 * b] = bytes[begin + b] >> 4; length[2 * b + 1] = bytes[begin + b] & 15; }
  const table = new Uint16Array(1 << LONGEST);
  let next = 0;
  for (let l = 1; l <= LONGEST; ++l) {
    for (let s = 0; s < 272; ++s)
      if (length[s] === l) {
        const first = next++ << (LONGEST - l);
        table.fill((s << 4) | l, first, first + (1 << (LONGEST - l)));
      }
    next <<= 1;
  }
  const out = new Uint8Array(count);
  let buffer = 0, bits = 0, at = begin + 136, k = 0;
  while (k < count) {
    while (bits < LONGEST) { buffer = (buffer << 8) | (at < end ? bytes[at] : 0); ++at; bits += 8; }
    const entry = table[(buffer >>> (bits - LONGEST)) & 4095];
    if (entry === 0) throw new Error('attn-data: a weight chunk does not decode');
    bits -= entry & 15;
    buffer &= (1 << bits) - 1;
    const symbol = entry >> 4;
    if (symbol < 256) out[k++] = symbol;
    else k += 2 << (symbol - 256);  // the array starts zeroed
  }
  return out;
}

window.addEventListener('error', (event) => { $('error').textContent = 'attention page: ' + event.message; });
const timings = {};
let mark = performance.now();
const weightBytes = bytesOf(data.weights), thumbnailBytes = bytesOf(data.thumbnails);
delete data.weights;
delete data.thumbnails;
if (data.chunks.length !== layers * heads + 1 || data.thumbnail_chunks.length !== layers * heads + 1)
  throw new Error('attn-data: ' + data.chunks.length + ' chunk offsets, expected ' + (layers * heads + 1));
const G = data.thumbnail;
const thumbnails = [];
for (let c = 0; c < layers * heads; ++c)
  thumbnails.push(decodeCodes(thumbnailBytes, data.thumbnail_chunks[c], data.thumbnail_chunks[c + 1], G * G));
timings.decode = performance.now() - mark;

// A head's weights, decoded the first time a view asks for them and kept: { values, scale }.
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const decoded = new Map();
function headData(l, h) {
  const c = l * heads + h;
  let head = decoded.get(c);
  if (head) return head;
  const begin = data.chunks[c], end = data.chunks[c + 1];
  const width = { float32: 4, unorm16: 2, unorm8: 0 }[data.encoding];
  if (width && end - begin !== perHead * width)
    throw new Error('attn-data: head ' + label(l, h) + ' has ' + (end - begin) + ' bytes, expected ' + perHead * width);
  if (data.encoding === 'float32') {
    const values = new Float32Array(perHead);
    if (littleEndian) values.set(new Float32Array(weightBytes.buffer, begin, perHead));
    else { const view = new DataView(weightBytes.buffer, begin); for (let i = 0; i < perHead; ++i) values[i] = view.getFloat32(4 * i, true); }
    head = { values, scale: 1 };
  } else if (data.encoding === 'unorm16') {
    const values = new Uint16Array(perHead), view = new DataView(weightBytes.buffer, begin);
    for (let i = 0; i < perHead; ++i) values[i] = view.getUint16(2 * i, true);
    head = { values, scale: 1 / 65535 };
  } else {
    // A byte: 1 if n row scales (float32) follow, 0 if they are all 1; a transform byte; then the
    // codes as they are (0) or each row's differences (1). A weight is its code · its row's scale / 255.
    const scaled = weightBytes[begin] === 1, codesAt = begin + 1 + (scaled ? 4 * n : 0);
    const codes = decodeCodes(weightBytes, codesAt + 1, end, perHead);
    if (weightBytes[codesAt] === 1)
      for (let i = 0; i < n; ++i)
        for (let start = rowStart(i), j = 1, m = visible(i); j < m; ++j)
          codes[start + j] = (codes[start + j] + codes[start + j - 1]) & 255;
    const values = new Float32Array(perHead), view = new DataView(weightBytes.buffer, begin + 1);
    for (let i = 0; i < n; ++i) {
      const step = (scaled ? view.getFloat32(4 * i, true) : 1) / 255;
      for (let start = rowStart(i), j = 0, m = visible(i); j < m; ++j) values[start + j] = codes[start + j] * step;
    }
    head = { values, scale: 1 };
  }
  decoded.set(c, head);
  return head;
}

const rowStart = lower ? (i) => i * (i + 1) / 2 : (i) => i * n;
const visible = (i) => (lower ? i + 1 : n);
function weight(l, h, i, j) {
  if (lower && j > i) return 0;
  const { values, scale } = headData(l, h);
  return values[rowStart(i) + j] * scale;
}
function row(l, h, i) {
  const out = new Array(n).fill(0);
  const { values, scale } = headData(l, h);
  const start = rowStart(i);
  for (let j = 0, m = visible(i); j < m; ++j) out[j] = values[start + j] * scale;
  return out;
}
// The k largest weights of a row, largest first, ties to the earlier key; zeros never count.
function topKeys(l, h, i, k) {
  const r = row(l, h, i);
  const keys = [];
  for (let j = 0; j < n; ++j) if (r[j] > 0) keys.push(j);
  keys.sort((a, b) => r[b] - r[a] || a - b);
  return keys.slice(0, k);
}

function ramp(stops) {
  const rgb = stops.map((s) => [1, 3, 5].map((o) => parseInt(s.substr(o, 2), 16)));
  const table = new Uint8Array(256 * 3);
  for (let k = 0; k < 256; ++k) {
    const x = (k / 255) * (rgb.length - 1), a = Math.min(Math.floor(x), rgb.length - 2), f = x - a;
    for (let c = 0; c < 3; ++c) table[3 * k + c] = Math.round(rgb[a][c] * (1 - f) + rgb[a + 1][c] * f);
  }
  return table;
}
const VIRIDIS = ramp(['#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#fde725']);
const DIVERGING = ramp(['#0072b2', '#ffffff', '#d55e00']);
const MASKED = [238, 238, 238];
const OUTSIDE = [251, 230, 200];  // before a sliding window: unreachable, apart from 0 (dark purple) and masked (grey)

// Max-pools head (l, h) into g × g cells (g ≤ n); NaN marks cells with no key at or before
// the query, −∞ cells whose every key is before a sliding window (unreachable). With the
// baseline, each cell keeps the difference from the even spread largest in size.
function pool(l, h, g, baseline) {
  const out = new Float32Array(g * g).fill(NaN);
  const { values, scale } = headData(l, h);
  for (let i = 0; i < n; ++i) {
    const start = rowStart(i), m = visible(i), first = firstVisible(l, i), even = 1 / (m - first);
    const outRow = Math.floor((i * g) / n) * g;
    for (let c = outRow, last = first > 0 ? outRow + Math.floor(((first - 1) * g) / n) : outRow - 1; c <= last; ++c)
      if (out[c] !== out[c]) out[c] = -Infinity;
    for (let j = first; j < m; ++j) {
      let v = values[start + j] * scale;
      if (baseline) v -= even;
      const c = outRow + Math.floor((j * g) / n), old = out[c];
      if (old !== old || old === -Infinity || (baseline ? Math.abs(v) > Math.abs(old) : v > old)) out[c] = v;
    }
  }
  return out;
}
// Whether thumbnail cell (r, c) has no visible key: its first key is after its last query.
const bucketFirst = new Array(G).fill(n), bucketLast = new Array(G).fill(-1);
for (let p = 0; p < n; ++p) {
  const b = Math.floor((p * G) / n);
  bucketFirst[b] = Math.min(bucketFirst[b], p);
  bucketLast[b] = Math.max(bucketLast[b], p);
}
const maskedCell = (r, c) => lower && bucketFirst[c] > bucketLast[r];
// Whether every key of the cell is before the window of every query in it (layer l).
const outsideCell = (l, r, c) => bucketLast[c] < firstVisible(l, bucketFirst[r]);
// The model view's G × G canvas of head (l, h) from its thumbnail: no weights decoded.
function thumbnailImage(l, h) {
  const codes = thumbnails[l * heads + h];
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = G;
  const context = canvas.getContext('2d');
  const image = context.createImageData(G, G);
  const px = image.data;
  for (let r = 0, c = 0; r < G; ++r)
    for (let col = 0; col < G; ++col, ++c) {
      const masked = maskedCell(r, col), unreachable = outsideCell(l, r, col), k = codes[c];
      for (let ch = 0; ch < 3; ++ch)
        px[4 * c + ch] = masked ? MASKED[ch] : unreachable ? OUTSIDE[ch] : VIRIDIS[3 * k + ch];
      px[4 * c + 3] = 255;
    }
  context.putImageData(image, 0, 0);
  return canvas;
}
function largestMagnitude(cells) {
  let most = 0;
  for (const v of cells) if (v === v && v !== -Infinity) most = Math.max(most, Math.abs(v));
  return most || 1;
}
const imageCache = new Map();
// An offscreen g × g canvas of head (l, h): viridis on [0, 1], or the difference from the
// even spread on blue–white–vermillion scaled to its largest magnitude.
function headImage(l, h, g, baseline) {
  const key = l + ',' + h + ',' + g + ',' + baseline;
  if (imageCache.has(key)) return imageCache.get(key);
  const cells = pool(l, h, g, baseline);
  const most = baseline ? largestMagnitude(cells) : 1;
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = g;
  const context = canvas.getContext('2d');
  const image = context.createImageData(g, g);
  const px = image.data;
  for (let c = 0; c < cells.length; ++c) {
    const v = cells[c];
    let rgb = v === -Infinity ? OUTSIDE : MASKED, table = null, k = 0;
    if (v === v && v !== -Infinity) {
      table = baseline ? DIVERGING : VIRIDIS;
      const t = baseline ? 0.5 + (0.5 * v) / most : v;
      k = Math.max(0, Math.min(255, Math.round(t * 255)));
    }
    for (let ch = 0; ch < 3; ++ch) px[4 * c + ch] = table ? table[3 * k + ch] : rgb[ch];
    px[4 * c + 3] = 255;
  }
  context.putImageData(image, 0, 0);
  const result = { canvas, most };
  imageCache.set(key, result);
  return result;
}
)JS",
                                              R"JS(
const state = {
  selected: data.selected, layer: data.open[0], head: data.open[1], view: 'model', baseline: false,
  shown: new Array(heads).fill(true), highlighted: [], hover: null, windowStart: 0,
};
state.highlighted = topKeys(state.layer, state.head, state.selected, TOP);

function el(tag, attributes, text) {
  const node = document.createElement(tag);
  for (const name in attributes || {}) node.setAttribute(name, attributes[name]);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Model view: one figure per head, built once; the open one outlined.
const figures = [];
function buildModelView() {
  const grid = $('grid');
  if (windows.some((w) => w > 0))
    document.querySelector('#view-model .hint').textContent +=
      ' Apricot: keys before a sliding layer\'s window, unreachable (not zero attention).';
  const size = Math.max(64, Math.min(140, Math.floor(880 / heads) - 14));
  grid.style.gridTemplateColumns = 'repeat(' + heads + ', ' + (size + 8) + 'px)';
  for (let l = 0; l < layers; ++l)
    for (let h = 0; h < heads; ++h) {
      const figure = el('figure', { 'data-layer': l, 'data-head': h, title: 'layer ' + (l + 1) + ', head ' + (h + 1) +
        (windows[l] > 0 ? ', sliding window of ' + windows[l] + ' keys' : '') });
      figure.appendChild(el('figcaption', {}, label(l, h)));
      const canvas = el('canvas', { width: size, height: size });
      const context = canvas.getContext('2d');
      context.imageSmoothingEnabled = false;
      context.drawImage(thumbnailImage(l, h), 0, 0, size, size);
      figure.appendChild(canvas);
      figure.addEventListener('click', () => { openHead(l, h); show('matrix'); });
      grid.appendChild(figure);
      figures.push(figure);
    }
}
function renderModelView() {
  for (const figure of figures)
    figure.classList.toggle('open', +figure.dataset.layer === state.layer && +figure.dataset.head === state.head);
}

// Head view.
function tokenClass(i) {
  return data.styles[i] === 'plain' ? '' : data.styles[i];
}
function buildHeadControls() {
  const chooser = $('layer-select');
  for (let l = 0; l < layers; ++l) chooser.appendChild(el('option', { value: l }, 'layer ' + (l + 1)));
  chooser.addEventListener('change', () => openHead(+chooser.value, state.head));
  const toggles = $('head-toggles');
  for (let h = 0; h < heads; ++h) {
    const chip = el('label', { class: 'chip', 'data-head': h });
    const box = el('input', { type: 'checkbox', 'data-head': h });
    box.checked = true;
    box.addEventListener('change', () => { state.shown[h] = box.checked; render(); });
    const swatch = el('span', { class: 'swatch' });
    swatch.style.background = headColour(h);
    const name = el('span', { class: 'head-name' }, 'H' + (h + 1));
    name.addEventListener('click', (event) => { event.preventDefault(); openHead(state.layer, h); });
    chip.append(box, swatch, name);
    toggles.appendChild(chip);
  }
}
function predictedTokens() {
  const next = data.next && data.next[state.selected];
  return next && next.length ? new Set([next[0][0]]) : new Set();
}
function renderHeadView() {
  $('layer-select').value = state.layer;
  for (const chip of document.querySelectorAll('#head-toggles .chip'))
    chip.classList.toggle('open', +chip.dataset.head === state.head);
  // Only a window of positions is laid out, so thousands of tokens stay cheap.
  if (state.selected < state.windowStart || state.selected >= state.windowStart + WINDOW)
    state.windowStart = Math.max(0, Math.min(n - WINDOW, state.selected - WINDOW / 2));
  const start = state.windowStart, end = Math.min(n, start + WINDOW);
  $('window-note').textContent = (n > WINDOW ? 'positions ' + start + '–' + (end - 1) + ' of ' + n : '') +
    (windows[state.layer] > 0 ? (n > WINDOW ? ' · ' : '') + 'sliding window of ' + windows[state.layer] +
      ' keys: the shaded keys are unreachable' : '');
  const queries = $('queries'), keys = $('keys');
  const top = new Set(state.highlighted), predicted = predictedTokens();
  const queryRows = [], keyRows = [];
  for (let i = start; i < end; ++i) {
    const q = el('div', { 'data-index': i, class: tokenClass(i) }, data.tokens[i]);
    if (i === state.selected) q.classList.add('selected');
    q.addEventListener('mouseenter', () => select(i));
    queryRows.push(q);
    const k = el('div', { 'data-index': i, class: tokenClass(i) }, data.tokens[i]);
    if (lower && i > state.selected) k.classList.add('future');
    if (outside(state.layer, state.selected, i)) {
      k.classList.add('outside');
      k.dataset.outside = 'true';
    }
    if (top.has(i)) k.classList.add('top');
    if (predicted.has(data.tokens[i])) k.classList.add('predicted');
    k.addEventListener('mouseenter', () => {
      if (outside(state.layer, state.selected, i)) {
        k.title = 'unreachable: before layer ' + (state.layer + 1) + "'s window of " + windows[state.layer] +
          ' keys (not zero attention)';
        return;
      }
      k.title = state.shown.map((on, h) => (on ? label(state.layer, h) + ' ' + weight(state.layer, h, state.selected, i).toFixed(4) : null)).filter((s) => s).join('\n');
    });
    keyRows.push(k);
  }
  queries.replaceChildren(...queryRows);
  keys.replaceChildren(...keyRows);
  if (state.view === 'head') queryRows[state.selected - start].scrollIntoView({ block: 'nearest' });
  keys.style.setProperty('--head-colour', headColour(state.head));
  const canvas = $('lines');
  canvas.width = 180;
  canvas.height = (end - start) * ROW;
  const context = canvas.getContext('2d');
  const y = (i) => (i - start) * ROW + ROW / 2;
  context.lineCap = 'round';
  for (let h = 0; h < heads; ++h) {
    if (!state.shown[h]) continue;
    context.strokeStyle = headColour(h);
    const r = row(state.layer, h, state.selected);
    for (let j = start; j < end; ++j) {
      if (r[j] < 0.005) continue;
      context.globalAlpha = Math.min(1, 0.15 + r[j]);
      context.lineWidth = 1 + 4 * r[j];
      context.beginPath();
      context.moveTo(2, y(state.selected));
      context.lineTo(canvas.width - 2, y(j));
      context.stroke();
    }
  }
  context.globalAlpha = 1;
}
)JS",
                                              R"JS(
// Matrix view: labels on both axes when the cells are large enough to read them.
const PLOT = 640;
function matrixLayout() {
  const cell = n <= PLOT ? Math.max(1, Math.min(20, Math.floor(PLOT / n))) : PLOT / n;
  const size = n <= PLOT ? cell * n : PLOT;
  // Token labels on both axes while a label fits in at most every fourth cell; beyond
  // that, position ticks (the readout names the hovered tokens).
  const labelled = n <= PLOT && cell * 4 >= 9;
  const margin = labelled ? 130 : 36;
  return { cell, size, labelled, margin, g: Math.min(n, Math.round(size)) };
}
function buildMatrixControls() {
  const chooser = $('head-select');
  for (let l = 0; l < layers; ++l)
    for (let h = 0; h < heads; ++h) chooser.appendChild(el('option', { value: l + ',' + h }, label(l, h)));
  chooser.addEventListener('change', () => { const [l, h] = chooser.value.split(',').map(Number); openHead(l, h); });
  $('baseline').addEventListener('change', (event) => { state.baseline = event.target.checked; render(); });
  const canvas = $('matrix');
  const at = (event) => {
    const { size, margin } = matrixLayout(), box = canvas.getBoundingClientRect();
    const x = event.clientX - box.left - margin, y = event.clientY - box.top - margin;
    if (x < 0 || y < 0 || x >= size || y >= size) return null;
    return [Math.floor((y * n) / size), Math.floor((x * n) / size)];
  };
  canvas.addEventListener('mousemove', (event) => {
    const cell = at(event);
    state.hover = cell ? [cell[0], cell[1], weight(state.layer, state.head, cell[0], cell[1])] : null;
    renderReadout();
  });
  canvas.addEventListener('mouseleave', () => { state.hover = null; renderReadout(); });
  canvas.addEventListener('click', (event) => { const cell = at(event); if (cell) select(cell[0]); });
}
function renderReadout() {
  const out = $('readout');
  if (!state.hover) { out.textContent = 'hover a cell for its weight; click to select its row'; return; }
  const [i, j, w] = state.hover, count = visibleCount(state.layer, i), even = 1 / count;
  const text = 'query ' + i + ' ' + data.tokens[i] + ' → key ' + j + ' ' + data.tokens[j] + ': ';
  if (lower && j > i) { out.textContent = text + 'masked (a later position)'; return; }
  if (outside(state.layer, i, j)) {
    out.textContent = text + 'unreachable: before the sliding window of ' + windows[state.layer] +
      ' keys (not zero attention)';
    return;
  }
  const difference = w - even;
  out.textContent = text + 'weight ' + w.toFixed(4) + ' · even spread 1/' + count + ' = ' + even.toFixed(4) +
    ' · difference ' + (difference >= 0 ? '+' : '') + difference.toFixed(4);
}
function renderMatrixView() {
  $('head-select').value = state.layer + ',' + state.head;
  const { cell, size, labelled, margin, g } = matrixLayout();
  const canvas = $('matrix');
  canvas.width = margin + size + 8;
  canvas.height = margin + size + 8;
  const context = canvas.getContext('2d');
  context.imageSmoothingEnabled = false;
  const image = headImage(state.layer, state.head, g, state.baseline);
  context.drawImage(image.canvas, margin, margin, size, size);
  context.fillStyle = '#222';
  if (labelled) {
    const stride = Math.ceil(10 / cell);  // every token from 10 px per cell, else every stride-th
    context.font = Math.max(9, Math.min(12, cell * stride - 1)) + 'px ui-monospace, "DejaVu Sans Mono", monospace';
    context.textBaseline = 'middle';
    for (let i = 0; i < n; i += stride) {
      const text = data.tokens[i].length > 18 ? data.tokens[i].slice(0, 17) + '…' : data.tokens[i];
      context.textAlign = 'right';
      context.fillText(text, margin - 4, margin + (i + 0.5) * cell);
      context.save();
      context.translate(margin + (i + 0.5) * cell, margin - 4);
      context.rotate(-Math.PI / 2);
      context.textAlign = 'left';
      context.fillText(text, 0, 0);
      context.restore();
    }
  } else {
    context.font = '10px sans-serif';
    // Ticks every 1, 2 or 5 × 10^k positions, about eight of them.
    const power = Math.pow(10, Math.floor(Math.log10(Math.max(1, n / 8))));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => n / s <= 10);
    for (let p = 0; p < n; p += step) {
      const at = margin + ((p + 0.5) * size) / n;
      context.textAlign = 'right';
      context.fillText(String(p), margin - 3, at + 3);
      context.textAlign = 'center';
      context.fillText(String(p), at, margin - 4);
    }
  }
  context.strokeStyle = '#d55e00';
  context.lineWidth = 2;
  const rowTop = margin + (state.selected * size) / n;
  context.strokeRect(margin - 1, rowTop - 1, size + 2, Math.max(1, size / n) + 2);
  const windowNote = windows[state.layer] > 0
    ? '; apricot: unreachable, before the sliding window of ' + windows[state.layer] + ' keys (not zero attention)'
    : '';
  $('legend').textContent = state.baseline
    ? 'blue: below the even spread, vermillion: above it; full colour at ±' + image.most.toFixed(3) + '; grey: masked' + windowNote
    : 'viridis: 0 (dark purple) to 1 (yellow); grey: masked' + windowNote + (n > g ? '; each pixel shows the largest of ' + (n / g).toFixed(1) + '² weights' : '');
  renderReadout();
}

// Beside every view: the position's next tokens and the open head's top keys.
function renderSide() {
  const i = state.selected;
  $('position-index').textContent = i;
  $('position-token').textContent = data.tokens[i];
  $('open-label').textContent = label(state.layer, state.head);
  const next = $('next');
  if (!data.next) next.replaceChildren(el('p', { class: 'hint' }, 'not given'));
  else
    next.replaceChildren(...data.next[i].slice(0, TOP).map(([token, p]) => {
      const bar = el('div', { class: 'bar' });
      const fill = el('span', { class: 'fill' });
      fill.style.width = Math.round(p * 90) + 'px';
      bar.append(el('span', { class: 'label' }, token), fill, el('span', {}, p >= 0.001 || p === 0 ? p.toFixed(3) : p.toExponential(1)));
      return bar;
    }));
  $('top-keys').replaceChildren(...state.highlighted.map((j) =>
    el('li', { 'data-index': j }, j + ' ' + data.tokens[j] + '  ' + weight(state.layer, state.head, i, j).toFixed(3))));
}

function render() {
  state.highlighted = topKeys(state.layer, state.head, state.selected, TOP);
  for (const button of document.querySelectorAll('#tabs button')) button.classList.toggle('active', button.dataset.view === state.view);
  for (const view of ['model', 'head', 'matrix']) $('view-' + view).classList.toggle('active', view === state.view);
  renderSide();
  if (state.view === 'model') renderModelView();
  if (state.view === 'head') renderHeadView();
  if (state.view === 'matrix') renderMatrixView();
}
function select(i) {
  i = Math.max(0, Math.min(n - 1, i));
  if (i !== state.selected) { state.selected = i; render(); }
}
function openHead(l, h) { state.layer = l; state.head = h; render(); }
function show(view) { state.view = view; render(); }

document.addEventListener('keydown', (event) => {
  if (event.target.tagName === 'SELECT' || event.target.tagName === 'INPUT') return;
  const moves = { ArrowUp: -1, ArrowLeft: -1, ArrowDown: 1, ArrowRight: 1 };
  if (event.key in moves) select(state.selected + moves[event.key]);
  else if (event.key === 'Home') select(0);
  else if (event.key === 'End') select(n - 1);
  else return;
  event.preventDefault();
});
for (const button of document.querySelectorAll('#tabs button')) button.addEventListener('click', () => show(button.dataset.view));

document.title = data.title;
const plural = (count, noun) => count + ' ' + noun + (count === 1 ? '' : 's');
$('title').textContent = data.title + ' — ' + plural(layers, 'layer') + ' × ' + plural(heads, 'head') + ', ' + plural(n, 'position');
buildHeadControls();
buildMatrixControls();
for (const [view, build] of [['model', buildModelView], ['head', renderHeadView], ['matrix', renderMatrixView]]) {
  mark = performance.now();
  if (view !== 'model') state.view = view;
  build();
  timings[view] = performance.now() - mark;
}
state.view = data.view;
render();
timings.total = performance.now() - started;

window.attnViewer = {
  data: { title: data.title, tokens: data.tokens, styles: data.styles, layers, heads, positions: n,
          storage: data.storage, encoding: data.encoding, next: data.next, windows },
  state: () => ({ selected: state.selected, layer: state.layer, head: state.head, view: state.view,
                  baseline: state.baseline, shown: state.shown.slice(), highlighted: state.highlighted.slice(),
                  hover: state.hover, windowStart: state.windowStart }),
  timings,
  weight, row, topKeys, select, openHead, show, outside, firstVisible,
  head: (l, h) => { const out = []; for (let i = 0; i < n; ++i) out.push(row(l, h, i)); return out; },
  // Where cell (i, j) of the matrix view lies on its canvas, in CSS pixels from the top left.
  matrixCell: (i, j) => { const { size, margin } = matrixLayout(); return [margin + ((j + 0.5) * size) / n, margin + ((i + 0.5) * size) / n]; },
  setBaseline: (on) => { state.baseline = !!on; $('baseline').checked = state.baseline; render(); },
  ready: true,
};
document.body.dataset.ready = 'true';
})();
)JS"};

}  // namespace attn::detail
