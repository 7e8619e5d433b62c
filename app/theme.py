"""The one stylesheet of the app, passed to every pane (panes render in shadow roots).

System fonts only: the app must not fetch anything from outside its origin.
"""

from __future__ import annotations

CSS = """
:host {
  --ink: #1f2933; --muted: #5f6b7a; --line: #d9dee5; --paper: #ffffff; --soft: #f5f7fa;
  --null-bg: #e7e9ed; --null-ink: #4b5563;
  --held-bg: #dbe7ff; --held-line: #2f5fd0; --held-ink: #173b8f;
  --cached-bg: #dcf5e4; --cached-line: #1f8a4c; --cached-ink: #0f5c31;
  --empty-bg: #ffffff; --empty-line: #9aa5b1; --empty-ink: #5f6b7a;
  --changed: #e8590c;
  --code-bg: #fbfbfd; --ran-bg: #fff4cc; --current-bg: #ffd866;
  --add-bg: #e6f6ea; --del-bg: #fde8e8;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); font-size: 14px; line-height: 1.4;
}
.mono, code, pre, .hash {
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
}
.panel-title { font-size: 12px; font-weight: 600; letter-spacing: .04em; text-transform: uppercase;
  color: var(--muted); margin: 0 0 6px 0; }
.panel-title code { text-transform: none; letter-spacing: 0; font-size: 12.5px; color: var(--ink); }
.box { background: var(--paper); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px; }
.empty-note { color: var(--muted); font-style: italic; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }

/* header */
.header h1 { font-size: 20px; margin: 0 0 2px 0; }
.header .kicker { font-size: 12px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .05em; }
.header p { margin: 4px 0 8px 0; color: var(--muted); max-width: 75ch; }
.howto { font-size: 13px; color: var(--muted); margin: 0; padding-left: 18px; }
.howto li { margin: 1px 0; }

/* pool */
.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 8px 0 0 0; padding: 0;
  list-style: none;
  font-size: 12.5px; color: var(--muted); }
.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { width: 18px; height: 14px; border-radius: 3px; border: 1.5px solid;
  display: inline-block; }
.pool { display: grid; padding-top: 4px !important;
  grid-template-columns: repeat(auto-fill, minmax(84px, 1fr)); gap: 6px;
  margin: 0; padding: 0; list-style: none; }
.pool.fixed { grid-template-columns: repeat(var(--cols), minmax(0, 1fr)); }
.pool.dense { grid-template-columns: repeat(auto-fill, minmax(40px, 1fr)); gap: 3px; }
.cell { position: relative; border: 1.5px solid; border-radius: 6px; padding: 4px 6px 5px 6px;
  min-height: 58px; display: flex; flex-direction: column; gap: 1px; box-sizing: border-box; }
.pool.dense .cell { min-height: 34px; padding: 2px 3px; font-size: 11px; }
.pool.dense .cell .hash, .pool.dense .cell .tag, .pool.dense .rc-label { display: none; }
.cell .tag-short { display: none; font-size: 10px; font-weight: 700; }
.pool.dense .cell .tag-short { display: inline; }
.pool.dense .cell .id { font-size: 11px; }
.cell .top { display: flex; justify-content: space-between; align-items: baseline; gap: 4px; }
.cell .id { font-weight: 700; font-size: 14px; }
.cell .tag { font-size: 10.5px; text-transform: uppercase; letter-spacing: .03em;
  font-weight: 600; }
.cell .rc { font-size: 12px; }
.cell .hash { font-size: 12px; }
.state-null, .swatch.state-null {
  background: repeating-linear-gradient(135deg, var(--null-bg) 0 6px, #d2d6dc 6px 8px);
  border-color: #8a94a3; color: var(--null-ink); }
.state-held, .swatch.state-held { background: var(--held-bg); border-color: var(--held-line);
  color: var(--held-ink); }
.state-free-cached, .swatch.state-free-cached { background: var(--cached-bg);
  border-color: var(--cached-line);
  color: var(--cached-ink); }
.state-free-empty, .swatch.state-free-empty { background: var(--empty-bg);
  border-color: var(--empty-line);
  border-style: dashed; color: var(--empty-ink); }
.cell.changed { box-shadow: 0 0 0 2.5px var(--changed); }
.cell.changed::after { content: "changed"; position: absolute; right: 6px; top: -8px;
  font-size: 9px;
  font-weight: 700; color: #fff; background: var(--changed); border-radius: 3px; padding: 0 3px;
  line-height: 13px; text-transform: uppercase; }
.pool.dense .cell.changed::after { content: ""; width: 6px; height: 6px; padding: 0; top: -3px;
  right: -3px; border-radius: 50%; }
.swatch.changed { background: #fff; border-color: var(--changed);
  box-shadow: 0 0 0 1.5px var(--changed); }
.usage { font-size: 12.5px; color: var(--muted); margin-top: 6px; }

@media (max-width: 560px) {
  .wide-only { display: none; }
  .pool.fixed { grid-template-columns: repeat(auto-fill, minmax(70px, 1fr)); }
  .cell .tag { font-size: 9.5px; }
}

/* free_block_queue */
.fq { display: flex; align-items: stretch; gap: 8px; }
.fq-end { flex: none; font-size: 11.5px; color: var(--muted); display: flex; flex-direction: column;
  justify-content: center; line-height: 1.2; }
.fq-end strong { color: var(--ink); font-size: 12px; }
.fq-list { display: flex; flex-wrap: wrap; gap: 4px; margin: 0; padding: 0; list-style: none;
  align-items: center;
  flex: 0 1 auto; min-width: 0; }
.fq-list li { border: 1.5px solid; border-radius: 5px; min-width: 28px; padding: 3px 5px;
  text-align: center;
  font-weight: 700; font-size: 13px; box-sizing: border-box; position: relative; }
.fq-list li:first-child { box-shadow: 0 0 0 2px #ffd866; }
.fq-list li + li::before { content: "\\2192"; position: absolute; left: -9px; color: #9aa5b1;
  font-weight: 400;
  font-size: 10px; top: 50%; transform: translateY(-50%); }
.fq-list li.changed { outline: 2px solid var(--changed); outline-offset: 1px; }
.fq-caption { font-size: 12px; color: var(--muted); margin-top: 4px; }

/* tables */
table.compact { border-collapse: collapse; width: 100%; font-size: 13px; }
table.compact th { text-align: left; font-weight: 600; color: var(--muted); font-size: 11.5px;
  border-bottom: 1px solid var(--line); padding: 3px 6px; white-space: nowrap; }
table.compact td { border-bottom: 1px solid #eef1f4; padding: 3px 6px; vertical-align: top; }
table.compact tr.changed td { background: #fff1e6; }
table.compact td.num { text-align: right; font-variant-numeric: tabular-nums; }
.chip { display: inline-block; border: 1.5px solid; border-radius: 4px; padding: 0 4px;
  margin: 1px 2px 1px 0;
  font-weight: 600; font-size: 12px; }
.chip.first { text-decoration: underline; text-underline-offset: 2px; }
.table-scroll { overflow-x: auto; }
.table-scroll.tall { max-height: 340px; overflow-y: auto; }  /* 125 hashes stay one panel */
.status { font-size: 11.5px; font-weight: 600; padding: 1px 6px; border-radius: 10px;
  background: var(--soft);
  border: 1px solid var(--line); display: inline-block; }
.status.RUNNING { background: var(--held-bg); border-color: var(--held-line);
  color: var(--held-ink); }
.status.WAITING, .status.PREEMPTED { background: #fff4cc; border-color: #c9a227; color: #6b5200; }
.queues { font-size: 12.5px; color: var(--muted); margin-top: 6px; }
.queues strong { color: var(--ink); }
.note { font-size: 12px; color: var(--muted); margin-top: 4px; }

/* log */
.log { display: flex; flex-direction: column-reverse; max-height: 150px; overflow: auto;
  background: #111827;
  color: #e5e7eb; border-radius: 6px; padding: 6px 8px; font-size: 12px; }
.log .line { white-space: pre-wrap; word-break: break-word; }
.log .line.new { color: #ffffff; }
.log .lvl-WARNING { color: #fbbf24; font-weight: 700; }
.log .lvl-ERROR { color: #f87171; font-weight: 700; }
.log .lvl-INFO { color: #6ee7b7; font-weight: 700; }
.log .lvl-DEBUG { color: #93c5fd; font-weight: 700; }
.log .empty-note { color: #9ca3af; }

/* narration */
.narration .call { font-size: 13px; margin: 0 0 6px 0; }
.narration .call code { background: var(--soft); border: 1px solid var(--line);
  border-radius: 4px; padding: 1px 5px; }
.narration .call code { overflow-wrap: anywhere; }
.narration .result { color: var(--muted); }
.narration p { margin: 0; font-size: 15px; line-height: 1.5; max-width: 80ch; }

/* code */
.code-head { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 4px 10px;
  font-size: 12.5px;
  margin-bottom: 6px; }
.code-head .where { color: var(--muted); }
.player { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 12px; }
.player .buttons { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }
.player .btn { font: inherit; font-size: 13.5px; height: 34px; padding: 0 12px; border-radius: 6px;
  border: 1px solid var(--line); background: var(--paper); color: var(--ink); cursor: pointer; }
.player .btn:hover:not(:disabled) { border-color: #9aa5b1; }
.player .btn:focus-visible, .player select:focus-visible, .player input:focus-visible {
  outline: 2px solid var(--held-line); outline-offset: 1px; }
.player .btn:disabled { opacity: .45; cursor: default; }
.player .btn.primary { background: #2f5fd0; border-color: #2f5fd0; color: #fff; }
.player .btn.play { background: #1f8a4c; border-color: #1f8a4c; color: #fff; min-width: 78px; }
.player .btn.pause { background: #e8a317; border-color: #e8a317; color: #1f2933; min-width: 78px; }
.player .speed { display: flex; align-items: center; gap: 6px; font-size: 12px;
  color: var(--muted); }
.player .speed select { font: inherit; font-size: 13px; height: 34px; border-radius: 6px;
  border: 1px solid var(--line); background: var(--paper); color: var(--ink); padding: 0 6px; }
.player .track { display: flex; align-items: center; gap: 10px; flex: 1 1 260px; min-width: 220px; }
.player .track input[type=range] { flex: 1 1 auto; min-width: 120px; accent-color: #2f5fd0; }
.player .counter { white-space: nowrap; }
.scenario-picker { display: flex; flex-direction: column; gap: 3px; font-size: 13px;
  color: var(--ink); }
.scenario-picker select { font: inherit; font-size: 14px; height: 34px; width: 100%;
  color: var(--ink); background: var(--paper); border: 1px solid var(--line);
  border-radius: 6px; padding: 0 8px; cursor: pointer; }
.scenario-picker select:focus-visible { outline: 2px solid var(--held-line); outline-offset: 1px; }
.modes { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 14px; font-size: 14px; }
.modes .modes-label { font-size: 12px; font-weight: 600; color: #5f6b7a;
  text-transform: uppercase; }
.modes .mode { display: inline-flex; align-items: center; gap: 5px; cursor: pointer; }
.modes input { margin: 0; accent-color: #2f5fd0; cursor: pointer; }
.modes input:focus-visible { outline: 2px solid var(--held-line); outline-offset: 2px; }
label.picker { display: flex; flex-direction: column; gap: 3px; margin: 0 0 6px 0;
  font-size: 12px; color: var(--muted); }
label.picker select { font: inherit; font-size: 13px; color: var(--ink); background: var(--paper);
  border: 1px solid var(--line); border-radius: 4px; padding: 5px 6px; max-width: 100%; }
.code-head > span { min-width: 0; overflow-wrap: anywhere; }
.code-scroll { position: relative; max-height: 520px; overflow: auto; background: var(--code-bg);
  border: 1px solid var(--line);
  border-radius: 6px; }
.code { margin: 0; padding: 4px 0; font-size: 12.5px; line-height: 1.5; min-width: max-content; }
.code .ln { display: flex; white-space: pre; padding-right: 10px; }
.code .no { flex: none; width: 3.2em; text-align: right; color: #9aa5b1; padding-right: 6px;
  user-select: none; }
.code .mk { flex: none; width: 1.4em; text-align: center; color: var(--muted); user-select: none; }
.code .ln.ran { background: var(--ran-bg); }
.code .ln.current { background: var(--current-bg); }
.code .ln.current .mk { color: #8a3b00; font-weight: 700; }
.code .ln.add { box-shadow: inset 3px 0 0 #1f8a4c; }
.code .ln.add:not(.ran) { background: var(--add-bg); }
.code .ln.add .mk { color: #1f8a4c; font-weight: 700; }
.code .ln.del { background: var(--del-bg); box-shadow: inset 3px 0 0 #c92a2a; }
.code .ln.del .mk { color: #c92a2a; font-weight: 700; }
.code .ln.del.ran { background: var(--ran-bg); }  /* the traced code is the old side */
.code .ln.del.current { background: var(--current-bg); }
.code .ln.del[data-other-line] code { text-decoration: line-through;
  text-decoration-color: #c92a2a88; }
.code-legend { display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 12px;
  color: var(--muted); margin-top: 6px; }
.code-legend span::before { content: ""; display: inline-block; width: 12px; height: 10px;
  margin-right: 4px;
  border: 1px solid var(--line); vertical-align: -1px; }
.code-legend .k-ran::before { background: var(--ran-bg); }
.code-legend .k-current::before { background: var(--current-bg); }
.code-legend .k-add::before { background: var(--add-bg); border-left: 3px solid #1f8a4c; }
.code-legend .k-del::before { background: var(--del-bg); border-left: 3px solid #c92a2a; }

/* metrics and KV events */
.muted { color: var(--muted); }
.metrics { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr));
  gap: 6px; margin: 0; }
.metric { background: var(--soft); border: 1px solid var(--line); border-radius: 6px;
  padding: 4px 8px; min-width: 0; }
.metric dt { font-size: 11px; color: var(--muted); font-family: ui-monospace, Menlo, Consolas,
  monospace; overflow-wrap: anywhere; }
.metric dd { margin: 0; font-size: 16px; font-weight: 700; font-variant-numeric: tabular-nums; }
.metrics.big .metric dd { font-size: 18px; }
.events { list-style: none; margin: 0; padding: 0; font-size: 12.5px; max-height: 160px;
  overflow: auto; }
.events li { padding: 2px 0; border-bottom: 1px solid #eef1f4; overflow-wrap: anywhere; }
.ev-BlockStored b { color: var(--cached-ink); }
.ev-BlockRemoved b { color: #8a3b00; }
.ev-AllBlocksCleared b { color: #c92a2a; }

/* hash chain: a fixed grid, so folding rows away never moves the columns */
.chain-sum { font-size: 13px; margin-bottom: 6px; }
.chain { font-size: 12px; container-type: inline-size; max-height: 420px; overflow: auto; }
.chain .crow, .chain .chead { display: grid; grid-template-columns: 2.2em minmax(0, 1fr);
  gap: 2px 6px; align-items: start; padding: 2px 0; border-bottom: 1px solid #eef1f4; }
.chain.two .crow, .chain.two .chead {
  grid-template-columns: 2.2em minmax(0, 1fr) 1.4em minmax(0, 1fr); }
.chain .chead { font-weight: 700; color: var(--muted); font-size: 11.5px; }
.chain .ix { color: var(--muted); text-align: right; font-variant-numeric: tabular-nums; }
.chain .f { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  overflow-wrap: anywhere; border-radius: 4px; padding: 1px 4px; }
.chain .f.same { background: var(--cached-bg); }
.chain .f.diff { background: #fff1e6; }
.chain .f.none { color: var(--muted); font-style: italic; }
.chain .f .h { color: var(--ink); }
.chain .f .par { color: var(--muted); }
.chain .f .xk.on { color: #8a3b00; font-weight: 700; }
.chain .cmp { text-align: center; font-weight: 700; }
.chain .cmp.same { color: var(--cached-ink); }
.chain .cmp.diff { color: #c92a2a; }
.chain details.cmid > summary { cursor: pointer; color: var(--muted); padding: 3px 0 3px 2.8em;
  border-bottom: 1px solid #eef1f4; }
@container (max-width: 480px) {
  .chain.two .crow { grid-template-columns: 2.2em minmax(0, 1fr) 1.4em; }
  .chain.two .crow > .f:last-child { grid-column: 2 / 3; }
  .chain.two .chead { grid-template-columns: 2.2em minmax(0, 1fr); }
  .chain.two .chead > span:nth-child(n+3) { display: none; }
}

/* prefill cost */
.prefill .src { margin: 0 0 6px 0; }
.prefill .bad { background: #fde8e8; border: 1px solid #c92a2a; color: #7a1010;
  border-radius: 6px; padding: 6px 10px; font-size: 13px; }
.prefill .bad ul { margin: 2px 0 0 0; padding-left: 18px; }
.prefill table { margin-bottom: 6px; }

/* CPU offload */
.offload-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr));
  gap: 6px 12px; font-size: 12.5px; margin-top: 8px; }
.offload-grid ul { margin: 2px 0 0 0; padding-left: 16px; }

/* engine health */
.narration.dead { border: 2px solid #c92a2a; background: #fff5f5; }
.dead-banner { background: #c92a2a; color: #fff; border-radius: 6px; padding: 8px 10px;
  margin: 0 0 8px 0; font-size: 14px; }
.dead-banner code { color: #fff; background: #a51d1d; border-radius: 3px; padding: 0 4px; }
.narration .result.error { color: #b42318; font-weight: 700; }
.narration .result.warn { color: #8a3b00; font-weight: 700; }
.aux { margin-top: 6px; font-size: 13px; color: var(--muted); }
.aux.apart { color: #8a3b00; }

/* scenario list */
.scenarios { margin-top: 4px; font-size: 13px; }
.scenarios > summary { cursor: pointer; font-weight: 600; }
.scenarios ol { margin: 4px 0 0 0; padding-left: 22px; max-height: 320px; overflow: auto; }
.scenarios li { margin: 3px 0; }
.scenarios li.here a { font-weight: 700; }

/* counter and notice */
.counter { font-weight: 700; font-variant-numeric: tabular-nums; font-size: 14px;
  white-space: nowrap; }
.notice { background: #fff4e5; border: 1px solid #f0a04b; color: #7a3e00; border-radius: 6px;
  padding: 6px 10px;
  font-size: 13px; }
.notice ul { margin: 2px 0 0 0; padding-left: 18px; }
"""

# Pygments token colours, scoped to the code panel (a light, high-contrast palette).
PYGMENTS_STYLE = "friendly"
