/// The stylesheet, script and icon, served from the binary: the dashboard needs nothing from the network.
///
/// Thread safety: immutable.
enum Assets {
    static let css = """
        :root { --fg: #1d232a; --muted: #68737d; --line: #dde2e6; --bg: #f7f8f9; --ok: #1b7f3b; --bad: #b42318;
          --warn: #9a6700; --accent: #2557a7; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); }
        body { margin: 0; background: var(--bg); }
        header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; background: #fff;
          border-bottom: 1px solid var(--line); }
        header nav a { margin-right: 1rem; color: var(--fg); text-decoration: none; }
        header nav a[aria-current] { font-weight: 600; border-bottom: 2px solid var(--accent); }
        .brand { display: flex; gap: .4rem; align-items: center; font-weight: 700; color: var(--fg); text-decoration: none; }
        main, #freshness, .notice { padding: 0 1.2rem; }
        main { padding-bottom: 3rem; }
        h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 1.6rem; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-weight: 600; color: var(--muted); font-size: .85rem; }
        .num { text-align: right; font-variant-numeric: tabular-nums; }
        .mono { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; }
        .muted { color: var(--muted); }
        .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(9rem, 1fr)); gap: .6rem; }
        .tiles div { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; }
        .tiles dt { color: var(--muted); font-size: .8rem; } .tiles dd { margin: 0; font-size: 1.4rem; font-weight: 600; }
        .tag { display: inline-block; padding: 0 .4rem; border-radius: 4px; background: #eef0f2; font-size: .8rem; }
        .tag.succeeded { background: #dcf5e3; color: var(--ok); } .tag.failed { background: #fde4e1; color: var(--bad); }
        .tag.cancelled, .tag.stale { background: #fff3d6; color: var(--warn); }
        .tag.paused, .tag.stopping { background: #fff3d6; color: var(--warn); }
        .tag.executing { background: #e1ebfb; color: var(--accent); }
        .outage { background: #fde4e1; color: var(--bad); padding: .5rem .8rem; border-radius: 6px; }
        .stale-data { color: var(--warn); }
        .notice { background: #e1ebfb; margin: .6rem 1.2rem; padding: .5rem .8rem; border-radius: 6px; }
        form.inline { display: inline; margin-right: .25rem; }
        .controls { white-space: nowrap; }
        button { font: inherit; font-size: .85rem; padding: .1rem .5rem; border: 1px solid var(--line);
          border-radius: 4px; background: #fff; cursor: pointer; }
        button.danger { color: var(--bad); border-color: #f1b5ad; }
        input[type=number] { width: 4.5rem; }
        .filters { display: flex; flex-wrap: wrap; gap: .8rem; align-items: end; margin-bottom: .8rem; }
        .filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
        progress { width: 7rem; vertical-align: middle; }
        .facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; background: #fff;
          padding: .7rem 1rem; border: 1px solid var(--line); border-radius: 6px; }
        .facts dt { color: var(--muted); } .facts dd { margin: 0; }
        pre { background: #fff; border: 1px solid var(--line); padding: .7rem; overflow: auto; max-height: 30rem; }
        .chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .5rem; min-height: 140px; }
        .chart svg { width: 100%; height: 140px; display: block; }
        .legend span { margin-right: 1rem; } .legend .ok { color: var(--ok); } .legend .bad { color: var(--bad); }
        .pager { margin-top: .6rem; } .pager a { margin-left: .6rem; }
        tr.gone td { color: var(--muted); }
        .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
        """

    static let javascript = """
        'use strict';
        (() => {
          // Every action asks first; the server asks too when JavaScript is off.
          document.addEventListener('submit', (event) => {
            const form = event.target;
            const question = form.dataset.confirm;
            if (!question) return;
            if (!window.confirm(question)) { event.preventDefault(); return; }
            if (!form.querySelector('input[name=confirmed]')) {
              const flag = document.createElement('input');
              flag.type = 'hidden'; flag.name = 'confirmed'; flag.value = 'yes';
              form.appendChild(flag);
            }
          });

          // A region someone is using (typing a width, ticking letters) is left alone until they are done.
          const busy = (region) =>
            (region.contains(document.activeElement) && document.activeElement.matches('input, select')) ||
            region.querySelector('input[type=checkbox]:checked') !== null;

          const points = [];
          const chart = document.getElementById('chart');
          const ns = 'http://www.w3.org/2000/svg';
          function draw() {
            if (!chart || points.length < 2) return;
            const width = 600, height = 120;
            const top = Math.max(1, ...points.map((p) => Math.max(p.succeeded, p.failed)));
            const svg = document.createElementNS(ns, 'svg');
            svg.setAttribute('viewBox', `0 0 ${width} ${height + 4}`);
            svg.setAttribute('preserveAspectRatio', 'none');
            const first = points[0].at, span = Math.max(1, points[points.length - 1].at - first);
            for (const [name, colour] of [['succeeded', '#1b7f3b'], ['failed', '#b42318']]) {
              const line = document.createElementNS(ns, 'polyline');
              line.setAttribute('fill', 'none'); line.setAttribute('stroke', colour); line.setAttribute('stroke-width', '2');
              line.setAttribute('points', points.map((p) =>
                `${((p.at - first) / span) * width},${height - (p[name] / top) * height + 2}`).join(' '));
              svg.appendChild(line);
            }
            const legend = document.createElement('p');
            legend.className = 'legend';
            const last = points[points.length - 1];
            legend.innerHTML = '';
            const items = [[`succeeded ${last.succeeded.toFixed(2)}/s`, 'ok'], [`failed ${last.failed.toFixed(2)}/s`, 'bad'],
              [`scale 0 to ${top.toFixed(2)}/s, the last ${Math.round(span)} s`, 'muted']];
            for (const [text, cls] of items) {
              const span = document.createElement('span'); span.className = cls; span.textContent = text; legend.appendChild(span);
            }
            chart.replaceChildren(svg, legend);
          }

          async function sample() {
            const response = await fetch('/live.json', { credentials: 'same-origin' });
            if (!response.ok) return;
            const data = await response.json();
            points.push(data);
            if (points.length > 900) points.shift();
            draw();
          }

          async function refresh() {
            try {
              const response = await fetch(location.href, { credentials: 'same-origin', headers: { 'X-Warren-Live': '1' } });
              if (response.ok) {
                const page = new DOMParser().parseFromString(await response.text(), 'text/html');
                for (const fresh of page.querySelectorAll('[data-live][id]')) {
                  const old = document.getElementById(fresh.id);
                  if (old && !busy(old)) old.replaceWith(document.importNode(fresh, true));
                }
              }
              if (chart) await sample();
            } catch (error) {
              // The dashboard itself is gone: the next poll tries again.
            }
            setTimeout(refresh, 2000);
          }
          if (chart) sample().catch(() => {});
          setTimeout(refresh, 2000);
        })();
        """

    static let icon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2557a7"/>\
        <path d="M6 22c3-9 6-12 10-12s7 3 10 12" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/>\
        <circle cx="11" cy="22" r="2.2" fill="#fff"/><circle cx="21" cy="22" r="2.2" fill="#fff"/></svg>
        """
}
