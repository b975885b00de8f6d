(function () {
  'use strict';
  var SVGNS = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1',
    '#ff9da7', '#9c755f', '#bab0ac', '#1f77b4', '#8c564b'];
  var NONE = '(none)';
  var failures = 0;

  // ---- helpers ---------------------------------------------------------------------------
  function fail(where, e) {
    failures += 1;
    var msg = where + ': ' + (e && e.message ? e.message : String(e));
    if (window.__profError) { window.__profError(msg); }
    if (window.console) { console.error(msg, e); }
  }
  function el(tag, attrs, kids) {
    var n = document.createElement(tag);
    setAttrs(n, attrs);
    append(n, kids);
    return n;
  }
  function sv(tag, attrs, kids) {
    var n = document.createElementNS(SVGNS, tag);
    setAttrs(n, attrs);
    append(n, kids);
    return n;
  }
  function setAttrs(n, attrs) {
    if (!attrs) { return; }
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) { return; }
      if (k === 'text') { n.textContent = String(v); } else if (k === 'style' && typeof v === 'object') {
        Object.keys(v).forEach(function (s) { n.style[s] = v[s]; });
      } else if (k.slice(0, 2) === 'on' && typeof v === 'function') {
        n.addEventListener(k.slice(2), v);
      } else { n.setAttribute(k, String(v)); }
    });
  }
  function append(n, kids) {
    if (kids === null || kids === undefined) { return; }
    if (!Array.isArray(kids)) { kids = [kids]; }
    kids.forEach(function (k) {
      if (k === null || k === undefined || k === false) { return; }
      n.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
    });
  }
  function tip(text) { return sv('title', { text: text }); }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
  // `v` with `d` decimals as Rust's `{:.d}` writes it: an exact tie rounds to the even digit
  // (toFixed rounds it up: 12250ns read 12.3µs here and 12.2µs in prof report).
  function fixed(v, d) {
    var a = Math.abs(v), p = Math.pow(10, d), m = a * p, f = Math.floor(m);
    if (m - f === 0.5 && (f + 0.5) / p === a && f % 2 === 0) {
      return (v < 0 ? '-' : '') + (f / p).toFixed(d);
    }
    return v.toFixed(d);
  }
  // Same rules as the terminal's durations: 850ns, 12.3µs, 4.56ms, 1.20s.
  function fmtNs(v) {
    v = num(v);
    if (v === null) { return '–'; }
    var a = Math.abs(v);
    if (a < 999.5) { return fixed(v, 0) + 'ns'; }
    if (a < 999950) { return fixed(v / 1e3, 1) + 'µs'; }
    if (a < 999995000) { return fixed(v / 1e6, 2) + 'ms'; }
    return fixed(v / 1e9, 2) + 's';
  }
  function fmtPct(f, digits) {
    f = num(f);
    if (f === null) { return '–'; }
    return (f * 100).toFixed(digits === undefined ? 1 : digits) + '%';
  }
  function fmtCi(a, b) { return num(a) === null && num(b) === null ? '–' : fmtRatio(a) + ' – ' + fmtRatio(b); }
  function fmtRatio(r) { r = num(r); return r === null ? '–' : r.toFixed(3) + '×'; }
  function fmtNum(v, d) {
    v = num(v);
    if (v === null) { return '–'; }
    if (d === undefined) { return Number.isInteger(v) ? String(v) : v.toFixed(2); }
    return v.toFixed(d);
  }
  function fmtP(p) {
    p = num(p);
    if (p === null) { return '–'; }
    if (p < 0.001) { return p.toExponential(1); }
    return p.toFixed(3);
  }
  function keyOf(v) { return v === null || v === undefined || v === '' ? NONE : String(v); }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function sortedNums(xs) {
    return arr(xs).filter(function (x) { return num(x) !== null; }).slice().sort(function (a, b) { return a - b; });
  }
  function quantile(sorted, q) {
    if (!sorted.length) { return null; }
    var pos = q * (sorted.length - 1), lo = Math.floor(pos), hi = Math.ceil(pos);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
  }
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) { return [lo]; }
    var raw = (hi - lo) / Math.max(1, count);
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var norm = raw / mag;
    var step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) { out.push(t); }
    return out;
  }
  function colorMap(keys) {
    // No prototype: a layer named `__proto__` or `constructor` is a key like any other.
    var m = Object.create(null), i = 0;
    keys.forEach(function (k) {
      if (!(k in m)) { m[k] = k === NONE ? '#8c959f' : PALETTE[i++ % PALETTE.length]; }
    });
    return m;
  }
  function containerWidth(node, fallback) {
    var w = node && node.clientWidth ? node.clientWidth : 0;
    return Math.max(320, w || fallback || 1000);
  }
  function verdictClass(v) {
    var s = String(v || '').toLowerCase();
    if (/slow|regress|worse/.test(s)) { return 'slower'; }
    if (/fast|improv|better/.test(s)) { return 'faster'; }
    return 'neutral';
  }
  function verdictText(v) { return v === null || v === undefined ? '–' : String(v).replace(/_/g, ' '); }
  // An event that was never measured has no times (the report's zeros are placeholders).
  function nsIfSampled(e, v) { return num(e.samples) ? fmtNs(v) : '–'; }
  function eventLabel(e) {
    var occ = num(e.occurrence);
    return String(e.name === undefined ? e.id : e.name) + (occ ? ' #' + occ : '');
  }

  // ---- data ------------------------------------------------------------------------------
  var D = JSON.parse(document.getElementById('data').textContent);
  var run = D.run || {};
  var rep = D.report || {};
  var it = rep.iteration || {};
  var events = arr(rep.events);
  // The report names a missing layer or phase '-'; the page calls it (none) everywhere.
  function groupsOf(xs) {
    return arr(xs).map(function (g) {
      var c = {};
      Object.keys(g).forEach(function (k) { c[k] = g[k]; });
      c.key = g.key === '-' ? NONE : g.key;
      return c;
    });
  }
  var phaseGroups = groupsOf(D.groups && D.groups.phase);
  var layerGroups = groupsOf(D.groups && D.groups.layer);
  var root = document.getElementById('app');

  var phaseColor = colorMap(phaseGroups.map(function (g) { return keyOf(g.key); })
    .concat(events.map(function (e) { return keyOf(e.phase); })));
  var layerColor = colorMap(layerGroups.map(function (g) { return keyOf(g.key); })
    .concat(events.map(function (e) { return keyOf(e.layer); })));

  var selectedKey = null; // id + '\u0000' + occurrence of the selected event
  var selectListeners = [];
  function evKey(e) { return String(e.id) + '\u0000' + String(e.occurrence); }
  function select(key) {
    selectedKey = selectedKey === key ? null : key;
    selectListeners.forEach(function (f) { f(selectedKey); });
  }

  // ---- header ----------------------------------------------------------------------------
  function renderHeader() {
    var badges = [
      el('span', { 'class': 'badge', text: 'mode: ' + keyOf(run.mode) }),
      run.complete ? el('span', { 'class': 'badge ok', text: 'complete' })
        : el('span', { 'class': 'badge bad', text: 'incomplete: the run stopped before the schedule ended' }),
      el('span', { 'class': 'badge', text: 'clock: ' + keyOf(run.clock) }),
      el('span', { 'class': 'badge', text: 'host: ' + keyOf(run.host) + ' · rank ' + fmtNum(run.rank) }),
      el('span', { 'class': 'badge', text: 'warmup ' + fmtNum(run.warmup) + ' · repeat ' + fmtNum(run.repeat) }),
      run.filter ? el('span', { 'class': 'badge', text: 'filter: ' + run.filter }) : null,
      D.diff ? el('span', { 'class': 'badge warn', text: 'compared with ' + keyOf(D.baseline && D.baseline.program) }) : null
    ];
    root.appendChild(el('header', null, [
      el('h1', { text: keyOf(run.program) + ' — profile' }),
      el('p', { 'class': 'sub' }, badges)
    ]));
  }

  // ---- overview --------------------------------------------------------------------------
  function tile(k, v, d, cls) {
    return el('div', { 'class': 'tile' + (cls ? ' ' + cls : '') }, [
      el('div', { 'class': 'k', text: k }), el('div', { 'class': 'v', text: v }),
      d ? el('div', { 'class': 'd', text: d }) : null
    ]);
  }
  function renderOverview() {
    var card = el('section', { 'class': 'card', id: 'overview' }, el('h2', { text: 'Iterations' }));
    root.appendChild(card);
    var p = rep.perturbation;
    var tiles = [
      num(it.measured) ? tile('Median iteration', fmtNs(it.median_ns), 'mean ' + fmtNs(it.mean_ns) + ' · p90 ' + fmtNs(it.p90_ns))
        : tile('Median iteration', '–', 'no iteration completed'),
      tile('Iterations', fmtNum(it.count), fmtNum(it.warmup) + ' warmup · ' + fmtNum(it.measured) + ' measured'),
      tile('Iteration CV', num(it.measured) ? fmtPct(it.cv) : '–', 'standard deviation / mean', num(it.cv) !== null && num(rep.cv_threshold) !== null && it.cv > rep.cv_threshold ? 'warn' : null),
      tile('Events', fmtNum(events.length), events.filter(function (e) { return e.noisy; }).length + ' noisy (CV > ' + fmtPct(rep.cv_threshold, 0) + ')'),
      tile('Timer floor', fmtNs(rep.timer_floor_ns === undefined ? run.timer_floor_ns : rep.timer_floor_ns), 'included in every sample'),
      p ? tile('Perturbation', fmtRatio(p.ratio), 'armed median ' + fmtNs(p.armed_median_ns) + ' vs warmup ' + fmtNs(p.warmup_median_ns) + (p.flagged ? ' — measuring slows the loop' : ''), p.flagged ? 'warn' : null)
        : tile('Perturbation', '–', run.mode === 'continuous' ? 'unknown: a continuous-mode file keeps only the last window\'s iterations, not the warmup' : 'not enough iterations to tell')
    ];
    card.appendChild(el('div', { 'class': 'tiles' }, tiles));
    var holder = el('div', { style: { marginTop: '14px' } });
    card.appendChild(holder);
    guarded('iteration chart', function () { iterationChart(holder); });
  }

  function iterationChart(holder) {
    var walls = arr(D.iterations && D.iterations.wall_ns);
    var stride = num(D.iterations && D.iterations.stride) || 1;
    // walls[i] is iteration first + i * stride (first > 0 in continuous mode: the last window).
    var first = num(D.iterations && D.iterations.first) || 0;
    if (!walls.length) { holder.appendChild(el('p', { 'class': 'empty', text: 'No iteration completed.' })); return; }
    var warm = num(run.warmup) || 0;
    var armed = arr(D.iterations && D.iterations.armed);
    var W = containerWidth(holder, 1300), H = 170, ml = 62, mr = 12, mt = 10, mb = 26;
    var s = sortedNums(walls);
    var yMax = Math.max(1, quantile(s, 0.99) * 1.15);
    var n = walls.length;
    var x = function (i) { return ml + (W - ml - mr) * (n <= 1 ? 0.5 : i / (n - 1)); };
    var y = function (v) { return mt + (H - mt - mb) * (1 - Math.min(v, yMax) / yMax); };
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'iteration wall times' });
    var grid = sv('g', { 'class': 'grid' }), axis = sv('g', { 'class': 'axis' });
    niceTicks(0, yMax, 4).forEach(function (t) {
      grid.appendChild(sv('line', { x1: ml, x2: W - mr, y1: y(t), y2: y(t) }));
      axis.appendChild(sv('text', { x: ml - 6, y: y(t) + 4, 'text-anchor': 'end', 'class': 'muted', text: fmtNs(t) }));
    });
    g.appendChild(grid);
    var warmIdx = Math.min(n, Math.max(0, Math.ceil((warm - first) / stride)));
    if (warmIdx > 0) {
      g.appendChild(sv('rect', { x: ml, y: mt, width: Math.max(2, x(warmIdx - 0.5) - ml), height: H - mt - mb, fill: '#fff8c5' }, tip('warmup: nothing measured')));
    }
    var pts = sv('g');
    walls.forEach(function (v, i) {
      var iter = first + i * stride;
      var clipped = v > yMax;
      var who = '';
      for (var k = 0; k < armed.length; k++) {
        if (iter >= armed[k][0] && iter <= armed[k][1]) { who = '\narmed: ' + armed[k][2]; break; }
      }
      pts.appendChild(sv('circle', { cx: x(i), cy: clipped ? mt + 2 : y(v), r: clipped ? 2.6 : 1.8, fill: clipped ? '#cf222e' : (iter < warm ? '#9a6700' : '#4e79a7'), 'fill-opacity': 0.7 },
        tip('iteration ' + iter + ': ' + fmtNs(v) + who)));
    });
    g.appendChild(pts);
    if (num(it.median_ns) !== null) {
      g.appendChild(sv('line', { x1: ml, x2: W - mr, y1: y(it.median_ns), y2: y(it.median_ns), stroke: '#1f2328', 'stroke-dasharray': '4 3' }, tip('median ' + fmtNs(it.median_ns))));
    }
    niceTicks(first, first + (n - 1) * stride, 8).forEach(function (t) {
      var xi = x((t - first) / stride);
      axis.appendChild(sv('line', { x1: xi, x2: xi, y1: H - mb, y2: H - mb + 4 }));
      axis.appendChild(sv('text', { x: xi, y: H - mb + 16, 'text-anchor': 'middle', 'class': 'muted', text: String(Math.round(t)) }));
    });
    axis.appendChild(sv('line', { x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    g.appendChild(axis);
    holder.appendChild(g);
    holder.appendChild(el('p', { 'class': 'note', text: 'Wall time of every iteration' + (first > 0 ? ' of the last completed window (from iteration ' + first + ')' : '') + ' (x: iteration index' + (stride > 1 ? ', every ' + stride + 'th shown' : '') + ').' + (warmIdx > 0 ? ' Shaded: warmup.' : '') + ' Dashed: median of the measured iterations. Red dots at the top are clipped outliers. Hover a dot for its time' + (armed.length ? ' and the event armed in it.' : '.') }));
  }

  // ---- windows (continuous mode) ---------------------------------------------------------
  // Each series is judged twice: its recent windows since the start (against the run's baseline
  // windows) and in the recent past (against the earlier windows kept); `drift` is the headline,
  // `drift_against` says which of the two it is.
  var AGAINST = [['since_start', 'since the start', 'start'], ['recent_past', 'in the recent past', 'earlier']];
  function isDrifted(s) { return !!s && (s.drift === 'slower' || s.drift === 'faster'); }
  function classOf(d) { return d === 'slower' ? 'slower' : d === 'faster' ? 'faster' : 'neutral'; }
  function driftClass(s) { return classOf(s.drift); }
  function judgement(s, key) { return (s && s[key]) || { drift: 'unknown', comparison: null }; }
  function isIteration(s) { return s.order === null || s.order === undefined; }
  function seriesLabel(s) { return isIteration(s) ? 'iteration' : eventLabel(s); }
  function spanText(b) { return b ? (b.first === b.last ? 'window ' + b.first : 'windows ' + b.first + '–' + b.last) : '–'; }
  // A change point: "slower from window 12 (iteration 3010): ×1.201, CI ×1.18–×1.22".
  function changePointText(c) {
    return c.drift + ' from window ' + c.index + ' (iteration ' + c.first_iteration + '): ' + fmtRatio(c.ratio) + ', CI ' + fmtCi(c.ci_low, c.ci_high);
  }
  function byChangePoints(s) { return !!s && s.drift_basis === 'change_points'; }
  // What a drifted series drifted by: its change points (the headline where the series has
  // enough windows), else "slower since the start", "faster in the recent past".
  function driftedHow(s) {
    if (byChangePoints(s)) { return arr(s.change_points).map(changePointText).join('; '); }
    return AGAINST.filter(function (a) { return isDrifted(judgement(s, a[0])); })
      .map(function (a) { return judgement(s, a[0]).drift + ' ' + a[1]; }).join(', ');
  }
  // The value a series is drawn relative to: the median of its medians in the baseline windows
  // (else the earlier windows, else all its windows).
  function seriesReference(s, w) {
    var idx = arr(w.indices), b = w.start || w.earlier;
    var xs = arr(s.medians_ns).filter(function (v, k) {
      return num(v) !== null && (!b || (idx[k] >= b.first && idx[k] <= b.last));
    });
    var m = quantile(sortedNums(xs), 0.5);
    return m !== null && m > 0 ? m : null;
  }
  // The position (in the kept windows) after which windows were dropped between the baseline
  // windows and the others; -1 when there is no such gap.
  function gapAfter(w) {
    var idx = arr(w.indices), b = num(w.baseline_windows) || 0;
    return b > 0 && b < idx.length && idx[b] > idx[b - 1] + 1 ? b - 1 : -1;
  }
  function driftColor(s) { var c = driftClass(s); return c === 'slower' ? '#cf222e' : c === 'faster' ? '#1a7f37' : '#57606a'; }
  // Polylines through the known points of `vals` (a gap where a value is unknown), in `parent`.
  function seriesLines(parent, vals, x, y, attrs, dotR) {
    var pts = [];
    function flush() {
      if (pts.length > 1) {
        var a = { points: pts.join(' ') };
        Object.keys(attrs).forEach(function (k) { a[k] = attrs[k]; });
        parent.appendChild(sv('polyline', a));
      } else if (pts.length === 1) {
        var xy = pts[0].split(',');
        parent.appendChild(sv('circle', { cx: xy[0], cy: xy[1], r: dotR, fill: attrs.stroke, 'fill-opacity': attrs['stroke-opacity'] }));
      }
      pts = [];
    }
    vals.forEach(function (v, k) {
      if (v === null) { flush(); } else { pts.push(x(k).toFixed(1) + ',' + y(v).toFixed(1)); }
    });
    flush();
  }
  // One series in its own units, for the table.
  function windowSpark(s, w) {
    var W = 130, H = 22, pad = 3;
    var vals = arr(s.medians_ns).map(num), known = sortedNums(vals);
    var g = sv('svg', { 'class': 'wspark', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true' });
    if (!known.length) { return g; }
    var lo = known[0], hi = known[known.length - 1], least = 0.1 * quantile(known, 0.5);
    if (hi - lo < least) { var mid = (lo + hi) / 2; lo = mid - least / 2; hi = mid + least / 2; }
    var x = function (k) { return pad + (W - 2 * pad) * (vals.length <= 1 ? 0.5 : k / (vals.length - 1)); };
    var y = function (v) { return hi > lo ? pad + (H - 2 * pad) * (1 - (v - lo) / (hi - lo)) : H / 2; };
    var k0 = w.recent ? arr(w.indices).indexOf(w.recent.first) : -1;
    if (k0 >= 0) { g.appendChild(sv('rect', { x: x(k0) - 2, y: 0, width: Math.max(2, W - x(k0) + 2), height: H, fill: '#fff8c5' })); }
    var gap = gapAfter(w);
    if (gap >= 0) { g.appendChild(sv('line', { 'class': 'wgap', x1: (x(gap) + x(gap + 1)) / 2, x2: (x(gap) + x(gap + 1)) / 2, y1: 0, y2: H, stroke: '#8c959f', 'stroke-dasharray': '2 2' })); }
    seriesLines(g, vals, x, y, { fill: 'none', stroke: driftColor(s), 'stroke-width': 1.5, 'stroke-opacity': 1 }, 1.8);
    return g;
  }
  // The shaded spans of the windows compared, and the gap of the windows dropped, on the chart.
  function windowSpans(g, w, x, half, box) {
    var idx = arr(w.indices);
    [[w.start, '#ddf4ff', 'baseline'], [w.earlier, '#eaeef2', 'earlier'], [w.recent, '#fff8c5', 'recent']].forEach(function (b) {
      if (!b[0]) { return; }
      var k0 = idx.indexOf(b[0].first), k1 = idx.indexOf(b[0].last);
      if (k0 < 0 || k1 < 0) { return; }
      var x0 = Math.max(box.left, x(k0) - half), x1 = Math.min(box.right, x(k1) + half);
      g.appendChild(sv('rect', { 'class': 'span ' + b[2], x: x0, y: box.top, width: Math.max(2, x1 - x0), height: box.bottom - box.top, fill: b[1] },
        tip(b[2] + ' ' + spanText(b[0]))));
    });
    var gap = gapAfter(w);
    if (gap >= 0) {
      var gx = (x(gap) + x(gap + 1)) / 2;
      g.appendChild(sv('line', { 'class': 'wgap', x1: gx, x2: gx, y1: box.top, y2: box.bottom, stroke: '#8c959f', 'stroke-dasharray': '4 3' },
        tip('windows ' + (idx[gap] + 1) + '–' + (idx[gap + 1] - 1) + ' were dropped (the baseline windows are kept for the whole run)')));
    }
  }
  // Every series relative to its reference on one chart: drifted events in colour, on top; the
  // iteration dashed; the others grey. Returns the colour of each drifted event.
  function windowChart(holder, w, all) {
    var idx = arr(w.indices), K = idx.length;
    var W = containerWidth(holder, 1300), H = 260, ml = 62, mr = 12, mt = 10, mb = 30;
    var lines = all.map(function (s) {
      var ref = seriesReference(s, w);
      return { s: s, rel: arr(s.medians_ns).map(function (v) { return ref !== null && num(v) !== null ? v / ref : null; }) };
    });
    var lo = 0.9, hi = 1.1;
    lines.forEach(function (l) { l.rel.forEach(function (v) { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
    lo = Math.max(lo, 0.25); hi = Math.min(hi, 4);
    var pad = (hi - lo) * 0.05; lo -= pad; hi += pad;
    var x = function (k) { return ml + (W - ml - mr) * (K <= 1 ? 0.5 : k / (K - 1)); };
    var y = function (v) { return mt + (H - mt - mb) * (1 - (Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo)); };
    var g = sv('svg', { 'class': 'wchart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'median per window of each event' });
    var grid = sv('g', { 'class': 'grid' }), axis = sv('g', { 'class': 'axis' });
    var half = K <= 1 ? (W - ml - mr) / 2 : (x(1) - x(0)) / 2;
    windowSpans(g, w, x, half, { left: ml, right: W - mr, top: mt, bottom: H - mb });
    niceTicks(lo, hi, 5).forEach(function (t) {
      grid.appendChild(sv('line', { x1: ml, x2: W - mr, y1: y(t), y2: y(t) }));
      axis.appendChild(sv('text', { x: ml - 6, y: y(t) + 4, 'text-anchor': 'end', 'class': 'muted', text: (t >= 1 ? '+' : '') + fmtPct(t - 1, 0) }));
    });
    g.appendChild(grid);
    g.appendChild(sv('line', { x1: ml, x2: W - mr, y1: y(1), y2: y(1), stroke: '#8c959f' }));
    var every = Math.max(1, Math.ceil(K / 12)), gap = gapAfter(w);
    idx.forEach(function (ix, k) {
      if (k % every !== 0 && k !== K - 1 && k !== gap && k !== gap + 1) { return; }
      axis.appendChild(sv('line', { x1: x(k), x2: x(k), y1: H - mb, y2: H - mb + 4 }));
      axis.appendChild(sv('text', { x: x(k), y: H - mb + 16, 'text-anchor': 'middle', 'class': 'muted', text: String(ix) }));
    });
    axis.appendChild(sv('line', { x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    g.appendChild(axis);
    var rank = function (l) { return isDrifted(l.s) ? 2 : isIteration(l.s) ? 1 : 0; };
    var colorOf = Object.create(null), c = 0;
    lines.slice().sort(function (a, b) { return rank(a) - rank(b); }).forEach(function (l) {
      var s = l.s, drifted = isDrifted(s), iter = isIteration(s);
      var col = drifted ? PALETTE[c++ % PALETTE.length] : iter ? '#1f2328' : '#8c959f';
      if (drifted) { colorOf[evKey(s)] = col; }
      var grp = sv('g', { 'class': 'series' + (drifted ? ' drifted' : '') + (iter ? ' iteration' : ''), 'data-drift': String(s.drift) });
      grp.appendChild(tip(seriesLabel(s) + (drifted ? ' — ' + driftedHow(s).toUpperCase() : '') + '\n' +
        arr(s.medians_ns).map(function (v, k) { return 'window ' + idx[k] + ': ' + fmtNs(v); }).join('\n')));
      seriesLines(grp, l.rel, x, y, { fill: 'none', stroke: col, 'stroke-width': drifted ? 2.5 : iter ? 2 : 1, 'stroke-opacity': drifted || iter ? 1 : 0.35, 'stroke-dasharray': iter ? '5 3' : null }, drifted ? 3 : 2);
      g.appendChild(grp);
    });
    holder.appendChild(g);
    return colorOf;
  }
  function windowTiles(w, series, drifted, iterS) {
    var b = num(w.baseline_windows) || 0, ic = iterS.comparison;
    var compared = AGAINST.filter(function (a) { return w[a[2]]; }).map(function (a) {
      return a[1] + ': against ' + (a[2] === 'start' ? 'the baseline ' : '') + spanText(w[a[2]]);
    });
    return el('div', { 'class': 'tiles' }, [
      tile('Windows kept', fmtNum(w.kept) + ' of ' + fmtNum(w.closed), (b ? 'the first ' + b + ' (the baseline) and the last ' + (w.kept - b) : 'closed so far') + (num(w.cap) !== null ? ' · PROF_WINDOWS=' + w.cap : '')),
      tile('Window length', fmtNum(w.iterations_per_window), 'iterations (each event measured in ' + fmtNum(run.repeat) + ')'),
      tile('Recent windows', w.recent ? spanText(w.recent) : '–', w.recent ? compared.concat(arr(w.notes)).join(' · ') : arr(w.notes).join(' · ')),
      tile('Drifted events', w.recent ? fmtNum(drifted.length) : '–', w.recent ? 'of ' + series.length + ', by the statistics of prof diff' : 'needs more windows', drifted.length ? 'bad' : null),
      byChangePoints(iterS) ? tile('Iteration', verdictText(iterS.drift) + (iterS.change_point ? ' from window ' + iterS.change_point.index : ''), iterS.change_point ? changePointText(iterS.change_point) : 'change points of the fastest-5% wall time per window', iterS.drift === 'slower' ? 'bad' : iterS.drift === 'faster' ? 'good' : null) :
      tile('Iteration', iterS.drift && iterS.drift !== 'unknown' ? verdictText(iterS.drift) + (iterS.drift_against === 'recent_past' ? ' in the recent past' : iterS.drift_against === 'start' ? ' since the start' : '') : '–', ic ? 'recent / ' + (iterS.drift_against === 'start' ? 'baseline ' : 'earlier ') + fmtRatio(ic.ratio) + ', CI ' + fmtCi(ic.ci_low, ic.ci_high) : 'median wall time per window', iterS.drift === 'slower' ? 'bad' : iterS.drift === 'faster' ? 'good' : null)
    ]);
  }
  function driftedChips(drifted, colorOf) {
    return el('ul', { 'class': 'chips drifted' }, drifted.map(function (s) {
      var parts = byChangePoints(s) ? arr(s.change_points).map(changePointText) : AGAINST.filter(function (a) { return isDrifted(judgement(s, a[0])); }).map(function (a) {
        var c = judgement(s, a[0]).comparison || {};
        return judgement(s, a[0]).drift + ' ' + a[1] + ' (' + fmtRatio(c.ratio) + ', CI ' + fmtCi(c.ci_low, c.ci_high) + ')';
      });
      return el('li', { title: String(s.id) }, [
        el('span', { 'class': 'dot', style: { background: colorOf[evKey(s)] || '#8c959f' } }),
        el('span', { 'class': 'verdict ' + driftClass(s), text: String(s.drift) }),
        ' ' + eventLabel(s) + (s.layer ? ' (' + s.layer + ')' : '') + ': ' + parts.join('; ')
      ]);
    }));
  }
  // The columns of one comparison in the windows table: the ratio (coloured by its verdict) and
  // its interval.
  function judgementCols(key, label, side) {
    var c = function (s) { return judgement(s, key).comparison; };
    return [
      { key: key, label: label, title: 'median of the recent windows\' samples over that of the ' + side + '\' samples; coloured when it drifted (p-value adjusted in the tooltip)', get: function (s) { return num(c(s) && c(s).ratio); }, cell: function (s, td) { td.className += ' ratio ' + classOf(judgement(s, key).drift); if (c(s)) { td.title = judgement(s, key).drift + ', p (adj.) ' + fmtP(c(s).p_adjusted); } return c(s) ? fmtRatio(c(s).ratio) : '–'; } },
      { key: key + '_ci', label: 'CI', title: 'confidence interval of the ratio, as prof diff computes it', get: function (s) { return num(c(s) && c(s).ci_low); }, cell: function (s) { return c(s) ? fmtCi(c(s).ci_low, c(s).ci_high) : '–'; } }
    ];
  }
  function renderWindows() {
    var w = rep.windows;
    if (!w) { return; }
    var card = el('section', { 'class': 'card', id: 'windows' }, el('h2', { text: 'Windows over time' }));
    root.appendChild(card);
    var series = arr(w.events), iterS = w.iteration || { medians_ns: [], drift: 'unknown' };
    var drifted = series.filter(isDrifted);
    card.appendChild(windowTiles(w, series, drifted, iterS));
    var holder = el('div', { style: { marginTop: '14px' } });
    card.appendChild(holder);
    var colorOf = {};
    guarded('windows chart', function () { colorOf = windowChart(holder, w, [iterS].concat(series)); });
    holder.appendChild(el('p', { 'class': 'note', text: 'Each event\'s median per window (x: window index), relative to its median over ' + (w.start ? 'the baseline windows, the run\'s first (shaded blue)' : 'the earlier windows (shaded grey)') + '; the recent windows are shaded yellow' + (w.start && w.earlier ? ', the earlier windows grey' : '') + (gapAfter(w) >= 0 ? '; the dashed line marks the windows dropped after the baseline' : '') + '. Dashed: the iteration. The recent windows are compared since the start (with the baseline windows) and in the recent past (with the earlier windows), by the statistics of prof diff (threshold ±' + fmtPct(w.threshold, 0) + ', α ' + w.alpha + ', Holm-adjusted). In colour: the events that drifted in either; grey: the others. Hover a line for its values.' }));
    if (drifted.length) {
      card.appendChild(el('h3', { text: 'Drifted — ' + drifted.length }));
      card.appendChild(driftedChips(drifted, colorOf));
    } else if (w.recent) {
      card.appendChild(el('p', { 'class': 'sub', style: { marginTop: '12px' }, text: 'No event drifted: every event\'s recent windows are within the noise of ' + (w.start ? 'the run\'s start' + (w.earlier ? ' and of the recent past' : '') : 'the recent past') + '.' }));
    }
    var cols = [
      { key: 'order', label: '#', asc: true, get: function (s) { return num(s.order); }, cell: function (s) { return isIteration(s) ? '–' : fmtNum(s.order); } },
      { key: 'name', label: 'Event', left: true, get: function (s) { return seriesLabel(s); }, cell: function (s, td) { td.className += ' name'; td.title = String(s.id); return seriesLabel(s); } },
      { key: 'layer', label: 'Layer', left: true, clip: true, get: function (s) { return keyOf(s.layer); }, cell: function (s) { return keyOf(s.layer); } },
      { key: 'phase', label: 'Phase', left: true, clip: true, get: function (s) { return keyOf(s.phase); }, cell: function (s) { return keyOf(s.phase); } },
      { key: 'series', label: 'Median per window', title: 'median of each window kept, oldest first (recent windows shaded; dashed: windows dropped)', get: function (s) { return num(s.change); }, cell: function (s, td) { td.appendChild(windowSpark(s, w)); return null; } },
      { key: 'first', label: 'First', title: 'median in the first window where it was measured', get: function (s) { return num(s.first_median_ns); }, cell: function (s) { return fmtNs(s.first_median_ns); } },
      { key: 'last', label: 'Last', title: 'median in the last window where it was measured', get: function (s) { return num(s.last_median_ns); }, cell: function (s) { return fmtNs(s.last_median_ns); } },
      { key: 'change', label: 'Change', title: 'last / first - 1', get: function (s) { return num(s.change); }, cell: function (s) { var v = num(s.change); return v === null ? '–' : (v > 0 ? '+' : '') + fmtPct(v); } }
    ].concat(judgementCols('since_start', 'Since start', 'baseline windows (the run\'s start)'), judgementCols('recent_past', 'Recent past', 'earlier windows'), [
      { key: 'drift', label: 'Drift', left: true, get: function (s) { return (isDrifted(s) ? '0' : '1') + String(s.drift); }, cell: function (s, td) { td.appendChild(el('span', { 'class': 'verdict ' + driftClass(s), text: isDrifted(s) ? driftedHow(s) : String(s.drift) })); return null; } }
    ]);
    var t = sortableTable(cols, [iterS].concat(series), {
      defaultCol: 'order',
      text: function (s) { return [seriesLabel(s), s.id, keyOf(s.layer), keyOf(s.phase), s.drift, driftedHow(s)].join(' '); },
      row: function (s, tbody) {
        var tr = el('tr', { 'class': 'wrow' + (isDrifted(s) ? ' drifted' : '') });
        cols.forEach(function (c) {
          var td = el('td', { 'class': (c.left ? 'l' : '') + (c.clip ? ' clip' : ''), title: c.clip ? c.get(s) : null });
          var v = c.cell(s, td);
          if (v !== null && v !== undefined) { td.appendChild(document.createTextNode(String(v))); }
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      }
    });
    var search = el('input', { type: 'search', placeholder: 'Filter by name, layer, phase, drift…', 'aria-label': 'filter windows' });
    search.addEventListener('input', function () { t.setFilter(search.value); });
    card.appendChild(el('div', { 'class': 'toolbar', style: { marginTop: '12px' } }, [search, el('span', { 'class': 'note', text: 'Click a header to sort (Drift: drifted events first).' })]));
    card.appendChild(el('div', { 'class': 'tablewrap' }, t.node));
  }

  // ---- breakdown -------------------------------------------------------------------------
  function stackedBar(title, groups, colors) {
    var box = el('div', null, el('h3', { text: title }));
    if (!groups.length) { box.appendChild(el('p', { 'class': 'empty', text: 'No events.' })); return box; }
    var iter = num(it.mean_ns);
    var selfShare = function (g) { return iter && iter > 0 ? Math.max(0, num(g.self_ns) || 0) / iter : 0; };
    var rows = groups.slice().sort(function (a, b) { return selfShare(b) - selfShare(a); });
    var sum = rows.reduce(function (m, g) { return m + selfShare(g); }, 0);
    var scale = sum > 1 ? 1 / sum : 1;
    var bar = el('div', { 'class': 'stack' });
    var list = el('ul', { 'class': 'legend' });
    var LEGEND = 12, restShare = 0, restSelf = 0;
    rows.forEach(function (g, i) {
      var k = keyOf(g.key), share = selfShare(g);
      var label = k + ': self time ' + fmtNs(g.self_ns) + ' per iteration (' + fmtPct(share) + ' of the mean iteration); total ' + fmtNs(g.total_ns) + ' (' + fmtPct(g.share) + '), nested events included; ' + fmtNum(g.events) + ' event(s), ' + fmtNum(g.calls_per_iter) + ' call(s) per iteration';
      bar.appendChild(el('div', { title: label, style: { width: (share * scale * 100).toFixed(3) + '%', background: colors[k] } }));
      if (i >= LEGEND && rows.length > LEGEND + 1) { restShare += share; restSelf += num(g.self_ns) || 0; return; }
      list.appendChild(el('li', { title: label }, [
        el('span', { 'class': 'sw', style: { background: colors[k] } }),
        el('span', { 'class': 'lk', text: k }),
        el('span', { 'class': 'lv' }, [el('b', { text: fmtPct(share) }), ' · ' + fmtNs(g.self_ns) + ' self · ' + fmtNum(g.events) + ' ev'])
      ]));
    });
    if (rows.length > LEGEND + 1) {
      list.appendChild(el('li', { title: 'hover the bar for each of them' }, [
        el('span', { 'class': 'sw', style: { background: '#d0d7de' } }),
        el('span', { 'class': 'lk', text: (rows.length - LEGEND) + ' more groups' }),
        el('span', { 'class': 'lv' }, [el('b', { text: fmtPct(restShare) }), ' · ' + fmtNs(restSelf) + ' self'])
      ]));
    }
    if (sum < 0.9995 && iter) {
      list.appendChild(el('li', { title: 'time of the mean iteration outside every measured event' }, [
        el('span', { 'class': 'sw', style: { background: '#e6e9ec', border: '1px solid #d0d7de' } }),
        el('span', { 'class': 'lk', text: 'outside every event' }),
        el('span', { 'class': 'lv' }, [el('b', { text: fmtPct(1 - sum) }), ' · ' + fmtNs(iter * (1 - sum))])
      ]));
    } else if (sum > 1.0005) {
      list.appendChild(el('li', { 'class': 'note', text: 'The groups add up to ' + fmtPct(sum) + ' of the mean iteration (bar scaled to fit): events were measured in different iterations, whose times varied (iteration CV ' + fmtPct(it.cv) + ').' }));
    }
    box.appendChild(bar);
    box.appendChild(list);
    return box;
  }
  function renderBreakdown() {
    var card = el('section', { 'class': 'card', id: 'breakdown' }, el('h2', { text: 'Where the iteration goes' }));
    card.appendChild(el('div', { 'class': 'grid2' }, [
      stackedBar('By phase', phaseGroups, phaseColor),
      stackedBar('By layer', layerGroups, layerColor)
    ]));
    card.appendChild(el('p', { 'class': 'note', text: 'Each group\'s self time (its events\' time less that of the events nested in them, so nothing is counted twice) as a share of the mean measured iteration. Hover for totals.' }));
    if (rep.breakdown) { guarded('step-time breakdown', function () { card.appendChild(stepBreakdown(rep.breakdown)); }); }
    root.appendChild(card);
  }
  // `prof flame`'s SVG in a frame of its own (its script expects its own document); once
  // loaded, the frame is sized to the graph and its drawn frames counted on the card.
  function renderFlame() {
    if (typeof D.flame !== 'string') { return; }
    var card = el('section', { 'class': 'card', id: 'flame' }, el('h2', { text: 'Flame graph' }));
    card.appendChild(el('p', { 'class': 'note', text: 'Each frame is an event, as wide as its time per mean iteration, on the event it ran inside; `other` is the time no top-level event covers. Click a frame to zoom, Search to highlight. ' + (D.diff ? 'Colours: prof diff\'s verdicts (red regressed, blue improved, grey no change, pale inconclusive, lilac not in the baseline).' : '') + ' The same graph: prof flame prof.json -o flame.svg.' }));
    var frame = el('iframe', { 'class': 'flame', title: 'flame graph' });
    frame.addEventListener('load', function () {
      guarded('flame graph', function () {
        var doc = frame.contentDocument;
        var svg = doc && doc.querySelector('svg');
        if (!svg) { throw new Error('the flame graph did not load'); }
        frame.style.height = Math.ceil(svg.getBoundingClientRect().height + 4) + 'px';
        var rects = doc.querySelectorAll('#frames rect');
        var drawn = 0;
        for (var i = 0; i < rects.length; i += 1) {
          if (rects[i].getBoundingClientRect().width > 0) { drawn += 1; }
        }
        card.dataset.frames = String(rects.length);
        card.dataset.drawn = String(drawn);
        if (!drawn) { throw new Error('the flame graph has no frame drawn'); }
      });
    });
    frame.srcdoc = D.flame;
    card.appendChild(frame);
    root.appendChild(card);
  }
  // The mean iteration by category (the top-level events' phases) plus `other`, the time no
  // top-level event covers, and the largest stretches no probe covers: where to annotate next.
  function stepBreakdown(b) {
    var box = el('div', { id: 'step-breakdown' }, el('h3', { text: 'Step time by category, and what no probe covers' }));
    var cats = b.categories || [];
    var sum = cats.reduce(function (m, c) { return m + (num(c.share) || 0); }, 0);
    var scale = sum > 1 ? 1 / sum : 1;
    var bar = el('div', { 'class': 'stack' });
    var list = el('ul', { 'class': 'legend' });
    cats.forEach(function (c) {
      var other = c.name === 'other';
      var color = other ? '#e6e9ec' : (phaseColor[c.name] || '#8c959f');
      var label = c.name + ': ' + fmtNs(c.total_ns) + ' per iteration (' + fmtPct(c.share) + ' of the mean iteration)' + (other ? ', covered by no top-level event' : ', ' + fmtNum(c.events) + ' top-level event(s)');
      bar.appendChild(el('div', { 'class': 'cat', title: label, style: { width: ((num(c.share) || 0) * scale * 100).toFixed(3) + '%', background: color } }));
      list.appendChild(el('li', { title: label }, [
        el('span', { 'class': 'sw', style: { background: color, border: other ? '1px solid #d0d7de' : null } }),
        el('span', { 'class': 'lk', text: c.name }),
        el('span', { 'class': 'lv' }, [el('b', { text: fmtPct(c.share) }), ' · ' + fmtNs(c.total_ns)])
      ]));
    });
    box.appendChild(bar);
    box.appendChild(list);
    if (num(b.overlap_ns) > 0) {
      box.appendChild(el('p', { 'class': 'note', text: 'The categories exceed the mean iteration by ' + fmtNs(b.overlap_ns) + ' (bar scaled to fit): top-level events overlap (several threads), or were measured in slower iterations.' }));
    }
    // Each stretch with its scatter as prof report writes it (`±29.70ms ?`, from the data);
    // only those that stand out of it (`reliable`, the report's rule) are recommended.
    var gaps = b.gaps || [];
    function gapItem(g) {
      var after = g.after ? g.after.label + ' (' + g.after.location + ')' : 'the start of the iteration';
      var before = g.before ? g.before.label + ' (' + g.before.location + ')' : 'step()';
      return el('li', { 'class': g.reliable ? 'gap' : 'gap noise' }, [el('b', { text: fmtNs(g.len_ns) }), ' (' + fmtPct(g.share) + ') at ' + fmtNs(g.start_ns) + ': after ' + after + ', before ' + before + ' ', el('span', { 'class': 'scatter', title: 'how far the offsets of the events on either side scatter' + (g.reliable ? '' : '; ? : the stretch is within it, and may not be there'), text: String(g.scatter) })]);
    }
    var sure = gaps.filter(function (g) { return g.reliable === true; });
    var unsure = gaps.filter(function (g) { return g.reliable !== true; });
    if (sure.length) {
      box.appendChild(el('p', { 'class': 'sub', text: 'Not covered by any probe, largest first: where to put the next probe!' }));
      box.appendChild(el('ul', { 'class': 'gaps' }, sure.map(gapItem)));
    } else if (unsure.length) {
      box.appendChild(el('p', { 'class': 'sub', text: 'No stretch that no probe covers stands out of the noise: nowhere to put the next probe yet.' }));
    }
    if (unsure.length) {
      box.appendChild(el('p', { 'class': 'note', text: 'Within the noise (?): not covered by any probe, but shorter than twice the scatter of the offsets on either side, so they may not be there (a busy machine, iterations of different lengths); not recommended.' }));
      box.appendChild(el('ul', { 'class': 'gaps noise' }, unsure.map(gapItem)));
    }
    box.appendChild(el('p', { 'class': 'note', text: 'Each category is the time per iteration of the top-level events of that phase; other is the mean iteration less all of them. Positions are on the average iteration (from the previous step()).' }));
    return box;
  }

  // ---- memory (profiler_core::Alloc) -----------------------------------------------------
  function fmtBytes(v) {
    v = num(v);
    if (v === null || !isFinite(v)) { return '–'; }
    var a = Math.abs(v);
    if (a < 1023.5) { return v.toFixed(0) + ' B'; }
    if (a < 1024 * 1023.95) { return (v / 1024).toFixed(1) + ' KiB'; }
    if (a < 1024 * 1024 * 1023.995) { return (v / 1048576).toFixed(2) + ' MiB'; }
    return (v / 1073741824).toFixed(2) + ' GiB';
  }
  // Per layer: the bytes its events allocate per iteration (median run x calls, an event
  // nested in another of the same layer not counted again) and the largest peak of one run.
  function memoryByLayer() {
    var byOrder = Object.create(null);
    events.forEach(function (e) { byOrder[e.order] = e; });
    var layerOf = function (e) {
      for (var x = e, n = 0; x && n < 64; x = byOrder[x.parent], n++) {
        if (x.layer !== null && x.layer !== undefined) { return x.layer; }
      }
      return NONE;
    };
    var rows = Object.create(null);
    events.forEach(function (e) {
      if (!e.memory) { return; }
      var k = layerOf(e);
      var p = byOrder[e.parent];
      var r = rows[k] || (rows[k] = { layer: k, alloc: 0, allocs: 0, peak: 0, events: 0 });
      r.events += 1;
      r.peak = Math.max(r.peak, num(e.memory.peak_bytes) || 0);
      if (p && p.memory && layerOf(p) === k) { return; }
      var calls = num(e.calls_per_iter) || 1;
      r.alloc += (num(e.memory.alloc_bytes) || 0) * calls;
      r.allocs += (num(e.memory.allocs) || 0) * calls;
    });
    return Object.keys(rows).map(function (k) { return rows[k]; })
      .sort(function (a, b) { return b.alloc - a.alloc; });
  }
  function renderMemory() {
    if (!events.some(function (e) { return e.memory; })) { return; }
    var rows = memoryByLayer();
    var card = el('section', { 'class': 'card', id: 'memory' }, el('h2', { text: 'Memory per layer' }));
    var max = rows.reduce(function (m, r) { return Math.max(m, r.alloc, r.peak); }, 0) || 1;
    var list = el('div', { 'class': 'membars' });
    rows.forEach(function (r) {
      var label = r.layer + ': ' + fmtBytes(r.alloc) + ' allocated per iteration in ' + fmtNum(r.allocs) + ' allocations; largest peak of one run ' + fmtBytes(r.peak) + ' (' + fmtNum(r.events) + ' event(s))';
      list.appendChild(el('div', { 'class': 'memrow', title: label }, [
        el('span', { 'class': 'lk', text: r.layer }),
        el('span', { 'class': 'memtrack' }, [
          el('span', { 'class': 'memalloc', style: { width: (100 * r.alloc / max).toFixed(2) + '%', background: layerColor[r.layer] || '#8c959f' } }),
          el('span', { 'class': 'mempeak', style: { left: (100 * r.peak / max).toFixed(2) + '%' } })
        ]),
        el('span', { 'class': 'lv', text: fmtBytes(r.alloc) + ' / iter · peak ' + fmtBytes(r.peak) })
      ]));
    });
    card.appendChild(list);
    card.appendChild(el('p', { 'class': 'note', text: 'Bars: bytes each layer allocates per iteration (the median run of each event times its calls per iteration; an event nested in another of the same layer is counted once). The mark: the largest peak of live bytes during one run of the layer\'s events. Counted by profiler_core::Alloc on the thread that ran the event; exact counts, not times.' }));
    root.appendChild(card);
  }

  // ---- input shapes ----------------------------------------------------------------------
  // The events split by their `shape` key: prof report's table, its texts as it prints them.
  function renderShapes() {
    var t = D.shapes;
    if (!t || !t.rows || !t.rows.length) { return; }
    var card = el('section', { 'class': 'card', id: 'shapes' }, el('h2', { text: 'By input shape' }));
    var left = 5;
    var head = el('tr', null, t.headers.map(function (h, i) { return el('th', { 'class': i < left ? 'l' : null, scope: 'col', text: h }); }));
    var body = el('tbody', null, t.rows.map(function (r) {
      return el('tr', null, r.map(function (c, i) { return el('td', { 'class': i < left ? 'l' : null, text: c }); }));
    }));
    card.appendChild(el('div', { 'class': 'tablewrap' }, el('table', { 'class': 'shapes' }, [el('thead', null, head), body])));
    card.appendChild(el('p', { 'class': 'note', text: 'Each event whose annotation has a shape key, split by the input shape of its runs: one row per shape kept (the most samples first), its median, p90 and rates from that shape\'s samples alone; "others" holds the samples of the shapes past PROF_SHAPES.' }));
    root.appendChild(card);
  }

  // ---- timeline --------------------------------------------------------------------------
  // The average iteration as prof trace draws it (each event's drawn_ns, the step and its
  // `other` stretches in D.average): the stepping thread's top-level events where the step-time
  // breakdown places them, so that the grey stretches are the breakdown's gaps.
  function renderTimeline() {
    var card = el('section', { 'class': 'card', id: 'timeline' }, el('h2', { text: 'Average iteration' }));
    root.appendChild(card);
    var avg = D.average || {};
    var drawn = function (e) { var d = arr(e.drawn_ns); return d.length === 2 && num(d[0]) !== null && num(d[1]) !== null ? d : null; };
    var evs = events.filter(function (e) { return drawn(e) !== null && (num(e.samples) || 0) > 0; });
    if (!evs.length) { card.appendChild(el('p', { 'class': 'empty', text: 'No event has a sample.' })); return; }
    var depthOf = function (e) { return Math.max(0, num(e.depth) || 0); };
    var maxDepth = evs.reduce(function (m, e) { return Math.max(m, depthOf(e)); }, 0);
    var end = evs.reduce(function (m, e) { return Math.max(m, drawn(e)[1]); }, 0);
    var step = num(avg.step_ns) || 0;
    var span = Math.max(end, step, num(it.median_ns) || 0, 1);
    var W = containerWidth(card, 1300) - 36, rowH = 24, ml = 22, mr = 12, mt = 4, mb = 24;
    var H = mt + (maxDepth + 1) * rowH + mb;
    var x = function (v) { return ml + (W - ml - mr) * v / span; };
    var g = sv('svg', { 'class': 'tl', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'average iteration timeline' });
    var axis = sv('g', { 'class': 'axis' }), grid = sv('g', { 'class': 'grid' });
    niceTicks(0, span, 10).forEach(function (t) {
      grid.appendChild(sv('line', { x1: x(t), x2: x(t), y1: mt, y2: H - mb }));
      axis.appendChild(sv('text', { x: x(t), y: H - mb + 15, 'text-anchor': 'middle', 'class': 'muted', text: fmtNs(t) }));
    });
    g.appendChild(grid);
    g.appendChild(axis);
    arr(avg.other).forEach(function (o) {
      var a = num(o[0]), b = num(o[1]);
      if (a === null || b === null) { return; }
      g.appendChild(sv('rect', { 'class': 'other', x: x(a), y: mt + 1, width: Math.max(1.5, x(b) - x(a)), height: rowH - 3, rx: 2, fill: '#e6e9ec', stroke: '#d0d7de' }, tip('other: ' + fmtNs(b - a) + ' from ' + fmtNs(a) + ', covered by no top-level event (the breakdown\'s gap)')));
    });
    if (num(it.median_ns) !== null && it.median_ns > 0) {
      g.appendChild(sv('line', { x1: x(it.median_ns), x2: x(it.median_ns), y1: mt, y2: H - mb, stroke: '#cf222e', 'stroke-dasharray': '4 3' }, tip('median iteration: ' + fmtNs(it.median_ns))));
    }
    var rects = [];
    evs.forEach(function (e) {
      var d = drawn(e);
      var x0 = x(d[0]), w = Math.max(1.5, x(d[1]) - x0);
      var yy = mt + depthOf(e) * rowH;
      var k = keyOf(e.phase);
      var text = eventLabel(e) + '\nlayer: ' + keyOf(e.layer) + ' · phase: ' + k + '\ndrawn from ' + fmtNs(d[0]) + ' to ' + fmtNs(d[1]) + ' (median offset ' + fmtNs(e.offset_ns) + ', median ' + fmtNs(e.median_ns) + ')\n' + fmtPct(e.share) + ' of the mean iteration' + (num(e.calls_per_iter) > 1 ? '\n' + fmtNum(e.calls_per_iter) + ' calls per iteration' : '');
      var r = sv('rect', { 'class': 'ev', x: x0, y: yy + 1, width: w, height: rowH - 3, rx: 2, fill: phaseColor[k] || '#8c959f', onclick: function () { select(evKey(e)); } }, tip(text));
      r.__key = evKey(e);
      rects.push(r);
      g.appendChild(r);
      var label = eventLabel(e);
      var fits = Math.floor((w - 6) / 6.2);
      if (fits >= 3) {
        g.appendChild(sv('text', { 'class': 'lbl', x: x0 + 3, y: yy + rowH / 2 + 3, text: label.length > fits ? label.slice(0, Math.max(1, fits - 1)) + '…' : label }));
      }
    });
    selectListeners.push(function (key) {
      rects.forEach(function (r) { r.setAttribute('class', 'ev' + (r.__key === key ? ' sel' : '')); });
    });
    card.appendChild(g);
    var legend = el('ul', { 'class': 'legend', style: { display: 'flex', gap: '16px', flexWrap: 'wrap' } });
    Object.keys(phaseColor).forEach(function (k) {
      if (!evs.some(function (e) { return keyOf(e.phase) === k; })) { return; }
      legend.appendChild(el('li', null, [el('span', { 'class': 'sw', style: { background: phaseColor[k] } }), 'phase ' + k]));
    });
    if (arr(avg.other).length) {
      legend.appendChild(el('li', null, [el('span', { 'class': 'sw', style: { background: '#e6e9ec', border: '1px solid #d0d7de' } }), 'other (no top-level event)']));
    }
    card.appendChild(legend);
    card.appendChild(el('p', { 'class': 'note', text: 'The average iteration as prof trace draws it: the top-level events of the stepping thread where the breakdown places them (each at its median start offset, scaled to the median iteration when it was measured in slower ones, or right after the event before it), so that the grey stretches are the breakdown\'s gaps; nested events at their distance from their parent, each lasting its median; one row per nesting depth. The step lasts ' + fmtNs(step) + ' (the median iteration, longer only if the events need it). Each event was measured in its own iterations, so this is a typical iteration, not a recorded one. Hover for details; click to select the event in the table.' }));
  }

  // ---- distributions ---------------------------------------------------------------------
  function sparkline(samples) {
    var s = sortedNums(samples);
    var W = 60, H = 18;
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true' });
    if (!s.length) { return g; }
    var lo = s[0], hi = s[s.length - 1], bins = Math.max(4, Math.min(16, Math.round(2 * Math.sqrt(s.length)))), counts = new Array(bins).fill(0);
    s.forEach(function (v) { counts[hi > lo ? Math.min(bins - 1, Math.floor((v - lo) / (hi - lo) * bins)) : Math.floor(bins / 2)] += 1; });
    var m = Math.max.apply(null, counts);
    counts.forEach(function (c, i) {
      if (!c) { return; }
      var h = Math.max(1.5, (H - 2) * c / m);
      g.appendChild(sv('rect', { x: i * W / bins + 0.5, y: H - h, width: W / bins - 1, height: h, fill: '#4e79a7' }));
    });
    return g;
  }
  function histogram(e) {
    var s = sortedNums(e.samples_ns);
    var W = 520, H = 170, ml = 34, mr = 12, mt = 16, mb = 28;
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'histogram of samples' });
    g.appendChild(sv('text', { x: ml, y: 11, 'class': 'muted', text: 'Histogram of durations (' + s.length + (e.samples_stride > 1 ? ' shown, every ' + e.samples_stride + 'th' : '') + ') — red: median, dashed: p90, dotted: mean' }));
    if (!s.length) { g.appendChild(sv('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', 'class': 'muted', text: 'no samples' })); return g; }
    var lo = s[0], hi = s[s.length - 1];
    if (hi === lo) { lo -= Math.max(1, lo * 0.05); hi += Math.max(1, hi * 0.05); }
    var iqr = quantile(s, 0.75) - quantile(s, 0.25);
    var bw = iqr > 0 ? 2 * iqr / Math.cbrt(s.length) : (hi - lo) / 10;
    var bins = Math.max(5, Math.min(40, Math.ceil((hi - lo) / bw) || 10));
    var counts = new Array(bins).fill(0);
    s.forEach(function (v) { counts[Math.min(bins - 1, Math.floor((v - lo) / (hi - lo) * bins))] += 1; });
    var cmax = Math.max.apply(null, counts);
    var x = function (v) { return ml + (W - ml - mr) * (v - lo) / (hi - lo); };
    var y = function (c) { return mt + (H - mt - mb) * (1 - c / cmax); };
    var axis = sv('g', { 'class': 'axis' });
    niceTicks(0, cmax, 3).forEach(function (t) {
      if (t !== Math.round(t)) { return; }
      axis.appendChild(sv('text', { x: ml - 5, y: y(t) + 4, 'text-anchor': 'end', 'class': 'muted', text: String(t) }));
      axis.appendChild(sv('line', { x1: ml - 2, x2: ml, y1: y(t), y2: y(t) }));
    });
    counts.forEach(function (c, i) {
      var a = lo + (hi - lo) * i / bins, b = lo + (hi - lo) * (i + 1) / bins;
      g.appendChild(sv('rect', { x: x(a) + 0.5, y: y(c), width: Math.max(0.5, x(b) - x(a) - 1), height: H - mb - y(c), fill: '#4e79a7' }, tip(fmtNs(a) + ' – ' + fmtNs(b) + ': ' + c + ' sample(s)')));
    });
    [['median', e.median_ns, '#cf222e', null], ['p90', e.p90_ns, '#9a6700', '4 3'], ['mean', e.mean_ns, '#1f2328', '2 2']].forEach(function (m) {
      var v = num(m[1]);
      if (v === null || v < lo || v > hi) { return; }
      g.appendChild(sv('line', { x1: x(v), x2: x(v), y1: mt, y2: H - mb, stroke: m[2], 'stroke-width': 1.5, 'stroke-dasharray': m[3] }, tip(m[0] + ' ' + fmtNs(v))));
    });
    niceTicks(lo, hi, 5).forEach(function (t) {
      axis.appendChild(sv('line', { x1: x(t), x2: x(t), y1: H - mb, y2: H - mb + 4 }));
      axis.appendChild(sv('text', { x: x(t), y: H - mb + 16, 'text-anchor': 'middle', 'class': 'muted', text: fmtNs(t) }));
    });
    axis.appendChild(sv('line', { x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    g.appendChild(axis);
    return g;
  }
  function seriesPlot(e) {
    var s = arr(e.samples_ns).filter(function (v) { return num(v) !== null; });
    var W = 420, H = 170, ml = 56, mr = 10, mt = 16, mb = 28;
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'samples in order' });
    g.appendChild(sv('text', { x: ml, y: 11, 'class': 'muted', text: 'Durations in the order measured — red: median' }));
    if (!s.length) { return g; }
    var sorted = s.slice().sort(function (a, b) { return a - b; });
    var lo = sorted[0], hi = sorted[sorted.length - 1];
    if (hi === lo) { lo -= Math.max(1, lo * 0.05); hi += Math.max(1, hi * 0.05); }
    var n = s.length;
    var x = function (i) { return ml + (W - ml - mr) * (n <= 1 ? 0.5 : i / (n - 1)); };
    var y = function (v) { return mt + (H - mt - mb) * (1 - (v - lo) / (hi - lo)); };
    var axis = sv('g', { 'class': 'axis' });
    niceTicks(lo, hi, 4).forEach(function (t) {
      axis.appendChild(sv('line', { x1: ml, x2: W - mr, y1: y(t), y2: y(t), stroke: '#eaeef2' }));
      axis.appendChild(sv('text', { x: ml - 5, y: y(t) + 4, 'text-anchor': 'end', 'class': 'muted', text: fmtNs(t) }));
    });
    axis.appendChild(sv('line', { x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    axis.appendChild(sv('text', { x: (ml + W - mr) / 2, y: H - mb + 16, 'text-anchor': 'middle', 'class': 'muted', text: 'sample 1 … ' + n }));
    g.appendChild(axis);
    if (num(e.median_ns) !== null && e.median_ns >= lo && e.median_ns <= hi) {
      g.appendChild(sv('line', { x1: ml, x2: W - mr, y1: y(e.median_ns), y2: y(e.median_ns), stroke: '#cf222e', 'stroke-dasharray': '4 3' }, tip('median ' + fmtNs(e.median_ns))));
    }
    var path = s.map(function (v, i) { return (i ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1); }).join(' ');
    g.appendChild(sv('path', { d: path, fill: 'none', stroke: '#4e79a7', 'stroke-opacity': 0.35 }));
    s.forEach(function (v, i) { g.appendChild(sv('circle', { cx: x(i), cy: y(v), r: 2.2, fill: '#4e79a7' }, tip('sample ' + (i + 1) + ': ' + fmtNs(v)))); });
    return g;
  }

  // ---- sortable table --------------------------------------------------------------------
  // cols: {key, label, title, left, get(row) -> sort value, cell(row, td)}
  function sortableTable(cols, rows, opts) {
    var state = { col: opts.defaultCol, dir: 1, filter: '' };
    var table = el('table');
    var thead = el('thead'), tbody = el('tbody');
    var trh = el('tr');
    var ths = cols.map(function (c) {
      var th = el('th', { 'class': c.left ? 'l' : null, title: c.title || null, scope: 'col' }, [c.label, el('span', { 'class': 'arrow' })]);
      th.addEventListener('click', function () {
        if (state.col === c.key) { state.dir = -state.dir; } else { state.col = c.key; state.dir = c.left || c.asc ? 1 : -1; }
        draw();
      });
      trh.appendChild(th);
      return th;
    });
    thead.appendChild(trh);
    table.appendChild(thead);
    table.appendChild(tbody);
    function value(c, r) { var v = c.get(r); return v === undefined ? null : v; }
    function draw() {
      var col = cols.filter(function (c) { return c.key === state.col; })[0] || cols[0];
      ths.forEach(function (th, i) { th.lastChild.textContent = cols[i] === col ? (state.dir > 0 ? '▲' : '▼') : ''; });
      var shown = rows.filter(function (r) { return !state.filter || opts.text(r).toLowerCase().indexOf(state.filter) >= 0; });
      shown.sort(function (a, b) {
        var va = value(col, a), vb = value(col, b);
        if (va === vb) { return (num(a.__i) || 0) - (num(b.__i) || 0); }
        if (va === null) { return 1; }
        if (vb === null) { return -1; }
        var c = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb));
        return c * state.dir;
      });
      while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
      shown.forEach(function (r) { opts.row(r, tbody, col.key === opts.defaultCol && state.dir > 0); });
      if (!shown.length) { tbody.appendChild(el('tr', null, el('td', { colspan: cols.length, 'class': 'l empty', text: 'No event.' }))); }
    }
    rows.forEach(function (r, i) { r.__i = i; });
    draw();
    return {
      node: table,
      redraw: draw,
      setFilter: function (f) { state.filter = String(f || '').toLowerCase(); draw(); }
    };
  }

  function renderEvents() {
    var card = el('section', { 'class': 'card', id: 'events' }, el('h2', { text: 'Events' }));
    root.appendChild(card);
    if (!events.length) { card.appendChild(el('p', { 'class': 'empty', text: 'The profile holds no event.' })); return; }
    var cv = num(rep.cv_threshold);
    var cols = [
      { key: 'order', label: '#', title: 'execution order', asc: true, get: function (e) { return num(e.order); }, cell: function (e) { return fmtNum(e.order); } },
      { key: 'name', label: 'Event', left: true, get: function (e) { return eventLabel(e); }, cell: null },
      { key: 'layer', label: 'Layer', left: true, clip: true, get: function (e) { return keyOf(e.layer); }, cell: function (e, td) { td.appendChild(el('span', { 'class': 'dot', style: { background: layerColor[keyOf(e.layer)] } })); return keyOf(e.layer); } },
      { key: 'phase', label: 'Phase', left: true, clip: true, get: function (e) { return keyOf(e.phase); }, cell: function (e, td) { td.appendChild(el('span', { 'class': 'dot', style: { background: phaseColor[keyOf(e.phase)] } })); return keyOf(e.phase); } },
      { key: 'samples', label: 'n', title: 'number of samples (runs measured)', get: function (e) { return num(e.samples); }, cell: function (e) { return fmtNum(e.samples); } },
      { key: 'calls', label: 'Calls', title: 'runs per iteration', get: function (e) { return num(e.calls_per_iter); }, cell: function (e) { return fmtNum(e.calls_per_iter); } },
      { key: 'median', label: 'Median', get: function (e) { return num(e.median_ns); }, cell: function (e) { return nsIfSampled(e, e.median_ns); } },
      { key: 'mean', label: 'Mean', get: function (e) { return num(e.mean_ns); }, cell: function (e) { return nsIfSampled(e, e.mean_ns); } },
      { key: 'min', label: 'Min', get: function (e) { return num(e.min_ns); }, cell: function (e) { return nsIfSampled(e, e.min_ns); } },
      { key: 'max', label: 'Max', get: function (e) { return num(e.max_ns); }, cell: function (e) { return nsIfSampled(e, e.max_ns); } },
      { key: 'p90', label: 'p90', get: function (e) { return num(e.p90_ns); }, cell: function (e) { return nsIfSampled(e, e.p90_ns); } },
      { key: 'stddev', label: 'Std dev', get: function (e) { return num(e.stddev_ns); }, cell: function (e) { return nsIfSampled(e, e.stddev_ns); } },
      { key: 'cv', label: 'CV', title: 'coefficient of variation: std dev / mean' + (cv !== null ? '; noisy above ' + fmtPct(cv, 0) : ''), get: function (e) { return num(e.cv); }, cell: function (e, td) { if (e.noisy) { td.className += ' cvbad'; } return num(e.samples) ? fmtPct(e.cv) : '–'; } },
      { key: 'total', label: 'Total', title: 'time per iteration (mean × calls), nested events included', get: function (e) { return num(e.total_ns); }, cell: function (e) { return nsIfSampled(e, e.total_ns); } },
      { key: 'self', label: 'Self', title: 'total per iteration less that of the events nested in it', get: function (e) { return num(e.self_ns); }, cell: function (e) { return nsIfSampled(e, e.self_ns); } },
      { key: 'pert', label: 'Perturb.', title: 'median wall time of the iterations this event was armed in, over that of the warmup iterations, minus 1', get: function (e) { return num(e.perturbation); }, cell: function (e) { var p = num(e.perturbation); return p === null ? '–' : (p > 0 ? '+' : '') + fmtPct(p); } },
      { key: 'share', label: 'Share', title: 'total per iteration over the mean measured iteration', get: function (e) { return num(e.share); }, cell: function (e, td) { td.className += ' sharecell'; td.appendChild(el('span', { 'class': 'sharebar', style: { width: Math.round(Math.min(1, Math.max(0, num(e.share) || 0)) * 40) + 'px' } })); return fmtPct(e.share); } },
      { key: 'dist', label: 'Samples', title: 'histogram of the samples (click the row for details)', get: function (e) { return num(e.cv); }, cell: function (e, td) { td.appendChild(sparkline(e.samples_ns)); return null; } }
    ];
    // Achieved rates, only when some event counts its work: the cells are prof report's texts
    // (work_cells), the numbers behind them (work) only sort.
    if (events.some(function (e) { return e.work_cells; })) {
      var peak = rep.peak || null;
      var against = peak ? 'against the ' + String(peak.source) + ' peak (below the table)' : 'no peak known: PROF_PEAK_FLOPS, PROF_PEAK_BYTES, PROF_PEAK or prof peak';
      var cellOf = function (e, k) { return e.work_cells && e.work_cells[k] !== undefined ? String(e.work_cells[k]) : '–'; };
      var workOf = function (f) { return function (e) { return e.work ? num(f(e.work)) : null; }; };
      var rate = function (key, label, what, text, interval, pick) {
        return { key: key, label: label, title: 'median over the samples of each run\'s ' + what + ' / its duration; hover a cell for the 95% interval', get: workOf(function (w) { var r = pick(w); return r ? r.median : null; }),
          cell: function (e, td) { if (e.work_cells) { td.title = '95% interval: ' + cellOf(e, interval); } return cellOf(e, text); } };
      };
      var workCols = [
        rate('flops', 'FLOP/s', 'FLOPs', 'FLOP/s', 'FLOP/s 95%', function (w) { return w.flops_per_s; }),
        rate('bytes', 'B/s', 'bytes', 'B/s', 'B/s 95%', function (w) { return w.bytes_per_s; }),
        { key: 'intensity', label: 'FLOP/B', title: 'arithmetic intensity: the samples\' FLOPs / their bytes', get: workOf(function (w) { return w.intensity; }), cell: function (e) { return cellOf(e, 'FLOP/B'); } },
        { key: 'bound', label: 'Bound', title: 'compute or memory: FLOP/B against the peak\'s FLOP/s / its B/s; ' + against, get: function (e) { return e.work && e.work.bound ? String(e.work.bound) : null; }, cell: function (e) { return cellOf(e, 'bound'); } },
        { key: 'mfu', label: 'MFU', title: 'median FLOP/s / the peak\'s FLOP/s, ' + against + '; over 100% is flagged: the peak or the flops key is wrong', get: workOf(function (w) { return w.mfu; }),
          cell: function (e, td) { if (e.over_peak) { td.className += ' overpeak'; td.title = 'over 100%: no run beats the peak, so the peak or the flops key is wrong'; } return cellOf(e, 'MFU'); } }
      ];
      var at = cols.length - 1;
      Array.prototype.splice.apply(cols, [at, 0].concat(workCols));
    }
    var open = Object.create(null);
    var rowsByKey = Object.create(null);
    function nameCell(e, td, indent) {
      td.className = 'l name';
      td.title = String(e.id) + (e.file ? '\n' + e.file + ':' + e.line : '');
      if (indent) { td.style.paddingLeft = (8 + 16 * Math.max(0, num(e.depth) || 0)) + 'px'; }
      td.appendChild(document.createTextNode(String(e.name)));
      if (num(e.occurrence)) { td.appendChild(el('span', { 'class': 'occ', text: '#' + e.occurrence })); }
      if (e.noisy) { td.appendChild(el('span', { 'class': 'tag noisy', title: 'CV above ' + fmtPct(cv, 0) + ': compare with care', text: 'noisy' })); }
      if (e.merged) { td.appendChild(el('span', { 'class': 'tag merged', title: 'holds every later run of this probe (PROF_MAX_EVENTS reached)', text: 'merged' })); }
    }
    function detail(e) {
      var meta = el('div', { 'class': 'meta' }, [
        el('code', { text: String(e.id) }), e.file ? ' — ' + e.file + ':' + e.line : '',
        ' — kind ' + keyOf(e.kind) + ' — median offset ' + fmtNs(e.offset_ns) + ' from the iteration start'
      ]);
      return el('td', { colspan: cols.length }, [meta, el('div', { 'class': 'charts' }, [histogram(e), seriesPlot(e)])]);
    }
    var t = sortableTable(cols, events, {
      defaultCol: 'order',
      text: function (e) { return [e.name, e.id, keyOf(e.layer), keyOf(e.phase)].join(' '); },
      row: function (e, tbody, indent) {
        var k = evKey(e);
        var tr = el('tr', { 'class': 'row' + (selectedKey === k ? ' sel' : '') });
        tr.addEventListener('click', function () { open[k] = !open[k]; select(k); });
        cols.forEach(function (c) {
          var td = el('td', { 'class': (c.left ? 'l' : '') + (c.clip ? ' clip' : ''), title: c.clip ? c.get(e) : null });
          if (c.key === 'name') { nameCell(e, td, indent); } else {
            var v = c.cell(e, td);
            if (v !== null && v !== undefined) { td.appendChild(document.createTextNode(String(v))); }
          }
          tr.appendChild(td);
        });
        rowsByKey[k] = tr;
        tbody.appendChild(tr);
        if (open[k]) { tbody.appendChild(el('tr', { 'class': 'detail' }, detail(e))); }
      }
    });
    selectListeners.push(function (key) {
      Object.keys(open).forEach(function (k) { if (k !== key) { open[k] = false; } });
      if (key) { open[key] = true; }
      t.redraw();
      if (key && rowsByKey[key] && rowsByKey[key].scrollIntoView) { rowsByKey[key].scrollIntoView({ block: 'nearest' }); }
    });
    var search = el('input', { type: 'search', placeholder: 'Filter by name, layer, phase…', 'aria-label': 'filter events' });
    search.addEventListener('input', function () { t.setFilter(search.value); });
    card.appendChild(el('div', { 'class': 'toolbar' }, [search, el('span', { 'class': 'note', text: 'Click a column header to sort, a row for its distribution. Default: execution order, nested events indented.' })]));
    card.appendChild(el('div', { 'class': 'tablewrap' }, t.node));
    if (rep.work) { card.appendChild(el('p', { 'class': 'note worknote', text: String(rep.work) })); }
  }

  // ---- diff ------------------------------------------------------------------------------
  function forest(d, lo, hi, thr) {
    var W = 150, H = 18, pad = 4;
    var L = function (v) { return Math.log(v); };
    var x = function (v) { return pad + (W - 2 * pad) * (L(Math.min(hi, Math.max(lo, v))) - L(lo)) / (L(hi) - L(lo)); };
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true' });
    if (num(thr) !== null && thr > 0 && thr < 1) {
      g.appendChild(sv('rect', { x: x(1 - thr), y: 0, width: Math.max(0, x(1 + thr) - x(1 - thr)), height: H, fill: '#eaeef2' }));
    }
    g.appendChild(sv('line', { x1: x(1), x2: x(1), y1: 0, y2: H, stroke: '#8c959f' }));
    var r = num(d.ratio), a = num(d.ci_low), b = num(d.ci_high);
    var cls = verdictClass(d.verdict), col = cls === 'slower' ? '#cf222e' : cls === 'faster' ? '#1a7f37' : '#57606a';
    if (a !== null && b !== null && a > 0 && b > 0) {
      g.appendChild(sv('line', { x1: x(a), x2: x(b), y1: H / 2, y2: H / 2, stroke: col, 'stroke-width': 2 }));
    }
    if (r !== null && r > 0) { g.appendChild(sv('circle', { cx: x(r), cy: H / 2, r: 3.5, fill: col })); }
    return g;
  }
  function renderDiff() {
    var diff = D.diff;
    if (!diff) { return; }
    var card = el('section', { 'class': 'card', id: 'diff' }, el('h2', { text: 'Comparison: ' + keyOf(D.baseline && D.baseline.program) + ' (before) → ' + keyOf(run.program) + ' (after)' }));
    root.appendChild(card);
    var thr = num(diff.threshold);
    var idf = diff.iteration || {};
    var ic = verdictClass(idf.verdict);
    card.appendChild(el('div', { 'class': 'tiles' }, [
      tile('Median iteration before', idf.before_n ? fmtNs(idf.before_median_ns) : '–', fmtNum(idf.before_n) + ' iterations'),
      tile('Median iteration after', idf.after_n ? fmtNs(idf.after_median_ns) : '–', fmtNum(idf.after_n) + ' iterations'),
      tile('Ratio after / before', fmtRatio(idf.ratio), (1 - (num(diff.alpha) || 0.05)) * 100 + '% CI ' + fmtCi(idf.ci_low, idf.ci_high)),
      tile('Verdict', verdictText(idf.verdict), 'p = ' + fmtP(idf.p_value) + (thr !== null ? ' · threshold ±' + fmtPct(thr, 0) : '') + (num(diff.alpha) !== null ? ' · α ' + diff.alpha : ''), ic === 'slower' ? 'bad' : ic === 'faster' ? 'good' : null)
    ]));
    var devs = arr(diff.events);
    var lo = 0.5, hi = 2;
    devs.forEach(function (d) {
      [d.ci_low, d.ratio, d.ci_high].forEach(function (v) { v = num(v); if (v !== null && v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    });
    lo = Math.max(lo, 1 / 64); hi = Math.min(hi, 64);
    var m = Math.max(1 / lo, hi); lo = 1 / m; hi = m;
    var counts = {}, order = [];
    devs.forEach(function (d) {
      var v = verdictText(d.verdict);
      if (!(v in counts)) { counts[v] = 0; order.push(v); }
      counts[v] += 1;
    });
    order.sort(function (a, b) { return counts[b] - counts[a]; });
    var chips = [];
    order.forEach(function (v) { chips.push(el('span', { 'class': 'verdict ' + verdictClass(v), text: counts[v] + ' ' + v }), ' '); });
    card.appendChild(el('p', { 'class': 'sub', style: { marginTop: '12px' } }, chips.concat([
      ' ' + devs.length + ' event(s) in both runs, matched by probe id and occurrence.'
    ])));
    if (devs.length) {
      var cols = [
        { key: 'i', label: '#', asc: true, get: function (d) { return d.__i; }, cell: function (d) { return String(d.__i + 1); } },
        { key: 'name', label: 'Event', left: true, get: function (d) { return eventLabel(d); }, cell: function (d, td) { td.className += ' name'; td.title = String(d.id); return eventLabel(d); } },
        { key: 'layer', label: 'Layer', left: true, clip: true, get: function (d) { return keyOf(d.layer); }, cell: function (d) { return keyOf(d.layer); } },
        { key: 'phase', label: 'Phase', left: true, clip: true, get: function (d) { return keyOf(d.phase); }, cell: function (d) { return keyOf(d.phase); } },
        { key: 'n', label: 'n', title: 'samples before / after', get: function (d) { return num(d.after_n); }, cell: function (d) { return fmtNum(d.before_n) + ' / ' + fmtNum(d.after_n); } },
        { key: 'before', label: 'Before', get: function (d) { return num(d.before_median_ns); }, cell: function (d) { return d.before_n ? fmtNs(d.before_median_ns) : '–'; } },
        { key: 'after', label: 'After', get: function (d) { return num(d.after_median_ns); }, cell: function (d) { return d.after_n ? fmtNs(d.after_median_ns) : '–'; } },
        { key: 'ratio', label: 'Ratio', title: 'after / before median', get: function (d) { return num(d.ratio); }, cell: function (d, td) { td.className += ' ratio ' + verdictClass(d.verdict); return fmtRatio(d.ratio); } },
        { key: 'ci', label: 'CI', title: 'confidence interval of the ratio, at 1 - alpha, widened by the noise allowance', get: function (d) { return num(d.ci_low); }, cell: function (d) { return fmtCi(d.ci_low, d.ci_high); } },
        { key: 'plot', label: 'Ratio, log scale', title: 'dot: ratio; bar: confidence interval; grey band: ±threshold; line: no change', get: function (d) { return num(d.ratio); }, cell: function (d, td) { td.appendChild(forest(d, lo, hi, thr)); return null; } },
        { key: 'p', label: 'p (adj.)', title: 'p-value adjusted for multiple comparisons', get: function (d) { return num(d.p_adjusted); }, cell: function (d) { return fmtP(d.p_adjusted); } },
        { key: 'verdict', label: 'Verdict', left: true, get: function (d) { return verdictText(d.verdict); }, cell: function (d, td) { td.appendChild(el('span', { 'class': 'verdict ' + verdictClass(d.verdict), text: verdictText(d.verdict) })); return null; } }
      ];
      var t = sortableTable(cols, devs, {
        defaultCol: 'i',
        text: function (d) { return [d.name, d.id, keyOf(d.layer), keyOf(d.phase), verdictText(d.verdict)].join(' '); },
        row: function (d, tbody) {
          var tr = el('tr');
          cols.forEach(function (c) {
            var td = el('td', { 'class': (c.left ? 'l' : '') + (c.clip ? ' clip' : ''), title: c.clip ? c.get(d) : null });
            var v = c.cell(d, td);
            if (v !== null && v !== undefined) { td.appendChild(document.createTextNode(String(v))); }
            tr.appendChild(td);
          });
          tbody.appendChild(tr);
        }
      });
      var search = el('input', { type: 'search', placeholder: 'Filter by name, layer, phase, verdict…', 'aria-label': 'filter comparison' });
      search.addEventListener('input', function () { t.setFilter(search.value); });
      card.appendChild(el('div', { 'class': 'toolbar' }, [search, el('span', { 'class': 'note', text: 'Ratio below 1: faster after. Click a header to sort.' })]));
      card.appendChild(el('div', { 'class': 'tablewrap' }, t.node));
    } else {
      card.appendChild(el('p', { 'class': 'empty', text: 'No event is in both profiles.' }));
    }
    [['Only in the baseline (before)', diff.only_before], ['Only in this profile (after)', diff.only_after]].forEach(function (p) {
      var xs = arr(p[1]);
      if (!xs.length) { return; }
      card.appendChild(el('h3', { text: p[0] + ' — ' + xs.length }));
      card.appendChild(el('ul', { 'class': 'chips' }, xs.map(function (m) {
        var extra = [m.layer ? 'layer ' + m.layer : null, m.phase ? 'phase ' + m.phase : null, num(m.median_ns) !== null ? 'median ' + fmtNs(m.median_ns) : null].filter(Boolean).join(', ');
        return el('li', { title: String(m.id) }, eventLabel(m) + (extra ? ' (' + extra + ')' : ''));
      })));
    });
  }

  // What to do about it: `prof advise`'s findings (the report's `advice`), the most time at
  // stake first, each with its evidence and what to try.
  function renderAdvice() {
    var findings = arr(rep.advice);
    var card = el('section', { 'class': 'card', id: 'advice' }, el('h2', { text: 'What to do about it' }));
    if (!findings.length) {
      card.appendChild(el('p', { 'class': 'empty', text: 'No rule fired (prof advise lists the rules).' }));
      root.appendChild(card);
      return;
    }
    var list = el('ol', { 'class': 'advice' });
    findings.forEach(function (f) {
      var share = num(it.mean_ns) ? ' (' + fmtPct(f.at_stake_ns / it.mean_ns) + ')' : '';
      list.appendChild(el('li', {}, [
        el('strong', { text: 'up to ' + fmtNs(f.at_stake_ns) + '/iter' + share + ' · ' + keyOf(f.id) + ': ' + keyOf(f.title) }),
        el('div', { 'class': 'note', text: 'evidence: ' + keyOf(f.evidence && f.evidence.summary) }),
        el('div', { 'class': 'note', text: 'try: ' + keyOf(f['try']) })
      ]));
    });
    card.appendChild(list);
    card.appendChild(el('p', { 'class': 'note', text: 'Each time at stake is an upper bound per iteration: the most that doing what the finding says could save. The same findings: prof advise prof.json.' }));
    root.appendChild(card);
  }

  function renderFooter() {
    root.appendChild(el('footer', { text: 'profiler-core ' + keyOf(run.profiler_version) + ' · ' + keyOf(run.schema) + ' · pid ' + fmtNum(run.pid) + ' · filter ' + (run.filter ? run.filter : '(every probe)') }));
  }

  function guarded(name, f) { try { f(); } catch (e) { fail(name, e); } }
  guarded('header', renderHeader);
  guarded('overview', renderOverview);
  guarded('advice', renderAdvice);
  guarded('windows', renderWindows);
  guarded('breakdown', renderBreakdown);
  guarded('flame', renderFlame);
  guarded('memory', renderMemory);
  guarded('timeline', renderTimeline);
  guarded('events', renderEvents);
  guarded('shapes', renderShapes);
  guarded('comparison', renderDiff);
  guarded('footer', renderFooter);
  // `report.html#event-12` opens the event of order 12.
  guarded('link', function () {
    var m = /^#event-(\d+)$/.exec(window.location.hash || '');
    if (!m) { return; }
    var e = events.filter(function (x) { return String(x.order) === m[1]; })[0];
    if (e) { select(evKey(e)); }
  });
  document.body.dataset.rendered = failures ? 'error' : 'ok';
}());
