package report

// pageCSS styles the HTML report: system fonts only (nothing to fetch),
// light by default and dark under prefers-color-scheme, charts that scale
// with their column, and a print layout that keeps charts whole.
const pageCSS = `
:root{--bg:#fff;--fg:#1b1f24;--mute:#5b6470;--line:#d6dae0;--card:#f6f8fa;
--c1:#1f6feb;--c2:#d1242f;--c3:#9a6700;--c4:#8250df;--c5:#e16f24;--c6:#0598bc;--c7:#1a7f37;
--degraded:rgba(212,160,23,.18);--overloaded:rgba(209,36,47,.16);--recovering:rgba(31,111,235,.13);--nodata:rgba(110,119,129,.12);
--crit:#d1242f;--warn:#bf8700;--info:#1f6feb;--ok:#1a7f37}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;--line:#30363d;--card:#161b22;
--c1:#58a6ff;--c2:#ff7b72;--c3:#e3b341;--c4:#bc8cff;--c5:#ffa657;--c6:#39c5cf;--c7:#3fb950;
--degraded:rgba(227,179,65,.16);--overloaded:rgba(255,123,114,.16);--recovering:rgba(88,166,255,.14);--nodata:rgba(145,152,161,.12);
--crit:#ff7b72;--warn:#e3b341;--info:#58a6ff;--ok:#3fb950}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header,main,footer{max-width:1200px;margin:0 auto;padding:0 16px}
header{padding-top:16px}
h1{font-size:1.6em;margin:.2em 0}
h2{font-size:1.2em;margin:1.4em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}
h3{font-size:1em;margin:.6em 0 .3em}
.sub,.legend,.note,.when,.stats,.none,.ref{color:var(--mute)}
.sub{margin:0;overflow-wrap:anywhere}
.verdict{font-size:1.15em;font-weight:600;padding:.5em .8em;border-left:4px solid;background:var(--card);margin:.8em 0}
.verdict.bad{border-color:var(--crit)}.verdict.ok{border-color:var(--ok)}
.kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:10px}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px 12px}
.kpi .k{font-size:.85em;color:var(--mute)}.kpi .v{font-size:1.5em;font-weight:600}.kpi .note{font-size:.8em}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
table.fit{width:100%}table.svc.fit{width:auto;max-width:100%}
table.fit th,table.fit td,.ev th,.ev td{white-space:normal}
main p,main li,.ev th{overflow-wrap:anywhere}
table.fit td .n{white-space:nowrap}
table.fates th,table.svc th{font-weight:normal;color:var(--mute)}
table.fates tr:first-child th,table.svc tr:first-child th{font-weight:600;color:var(--fg)}
tr.total td{font-weight:600;border-top:2px solid var(--line)}
tr.peak td{font-weight:600}
.span{margin:.3em 0 0;color:var(--mute)}
.detect{margin:.4em 0}
.row{border:1px solid var(--line);border-radius:6px;padding:4px 12px 8px;margin:10px 0;background:var(--bg)}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:8px 16px}
.panel{margin:0;break-inside:avoid}
figcaption{font-size:.85em;font-weight:600}
svg.chart{width:100%;height:auto;display:block}
svg text{fill:var(--mute);font-size:11px;font-family:inherit}
.ax{stroke:var(--mute);stroke-width:1}.grid{stroke:var(--line);stroke-dasharray:3 3}
.ln{fill:none;stroke-width:1.8;stroke-linejoin:round}.dash{stroke-dasharray:5 3}
.s1{stroke:var(--c1);fill:var(--c1)}.s2{stroke:var(--c2);fill:var(--c2)}.s3{stroke:var(--c3);fill:var(--c3)}
.s4{stroke:var(--c4);fill:var(--c4)}.s5{stroke:var(--c5);fill:var(--c5)}.s6{stroke:var(--c6);fill:var(--c6)}.s7{stroke:var(--c7);fill:var(--c7)}
polyline.ln{fill:none}
.pts circle{stroke:none}
.ph-degraded{fill:var(--degraded);background:var(--degraded)}.ph-overloaded{fill:var(--overloaded);background:var(--overloaded)}
.ph-recovering{fill:var(--recovering);background:var(--recovering)}.ph-no_data{fill:var(--nodata);background:var(--nodata)}
.fd-critical{fill:var(--crit)}.fd-warning{fill:var(--warn)}.fd-info{fill:var(--info)}
.keys{list-style:none;padding:0;margin:2px 0 0;font-size:.8em;display:flex;flex-wrap:wrap;gap:2px 12px}
.keys .absent{color:var(--mute)}
i.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:baseline;border-radius:2px}
i.sw.ln{height:3px;vertical-align:middle;background:currentColor}
i.sw.s1{color:var(--c1)}i.sw.s2{color:var(--c2)}i.sw.s3{color:var(--c3)}i.sw.s4{color:var(--c4)}i.sw.s5{color:var(--c5)}i.sw.s6{color:var(--c6)}i.sw.s7{color:var(--c7)}
svg.chaindia{width:100%;height:auto}
.node{fill:var(--card);stroke:var(--mute)}.nodet{fill:var(--fg);font-size:13px}
.arrow{stroke:var(--mute);stroke-width:1.5}.head{fill:var(--mute)}.amp{fill:var(--fg);font-size:15px;font-weight:600}
.finding{border:1px solid var(--line);border-left:4px solid var(--info);border-radius:6px;padding:4px 12px;margin:10px 0;break-inside:avoid}
.finding.sev-critical{border-left-color:var(--crit)}.finding.sev-warning{border-left-color:var(--warn)}
.sev{text-transform:uppercase;font-size:.75em;font-weight:700;letter-spacing:.04em}
.sev-critical .sev{color:var(--crit)}.sev-warning .sev{color:var(--warn)}.sev-info .sev{color:var(--info)}
.msg{margin:.3em 0}
.ev th{font-weight:normal;color:var(--mute);font-family:ui-monospace,monospace;font-size:.85em}
.advice{background:var(--card);padding:6px 10px;border-radius:4px}
bdi,code{overflow-wrap:anywhere}
footer{margin-top:2em;padding-bottom:2em;border-top:1px solid var(--line);font-size:.9em}
footer dt{font-weight:600;margin-top:.5em}footer dd{margin:0;overflow-wrap:anywhere}
.cmd{display:block;background:var(--card);padding:6px 8px;border-radius:4px;white-space:pre-wrap;word-break:break-all}
a{color:var(--c1)}
details{margin:.6em 0}summary{cursor:pointer;color:var(--mute)}
.assume td{white-space:normal;text-align:left;vertical-align:top}
@media print{:root{--bg:#fff;--fg:#000;--card:#f4f4f4;--mute:#444;--line:#bbb}
body{font-size:11pt}.row,.finding,figure{break-inside:avoid}.charts{grid-template-columns:1fr 1fr}}
`
