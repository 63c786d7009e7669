// Evaluated in history.html by test_build.py once the page has loaded: what the laid-out
// page shows, as a plain object.
(function () {
  function badge(id) {
    const el = document.getElementById(id);
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return { text: el.textContent.trim(), top: r.top + window.scrollY, className: el.className };
  }
  return {
    innerWidth: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    drift: badge("drift-badge"),
    audit: badge("audit-badge"),
    driftRows: Array.from(document.querySelectorAll("tr.drift-row")).map(function (tr) {
      return tr.textContent;
    }),
    failedRows: document.querySelectorAll("#nights tr.failed").length,
    plots: document.querySelectorAll("#trends .plot svg").length,
    trendHeadings: document.querySelectorAll("#trends h3").length,
    links: Array.from(document.querySelectorAll("a[href]")).map(function (a) {
      const id = a.hash ? decodeURIComponent(a.hash.slice(1)) : null;
      return { href: a.getAttribute("href"), url: a.href, anchored: id ? !!document.getElementById(id) : null };
    }),
    tables: Array.from(document.querySelectorAll(".table-scroll")).map(function (d) {
      return { scrollWidth: d.scrollWidth, clientWidth: d.clientWidth, overflowX: getComputedStyle(d).overflowX };
    }),
  };
})();
