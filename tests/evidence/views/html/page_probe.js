// Evaluated in report.html by test_report.py once the page has loaded: what the laid-out
// page shows, as a plain object.
(function () {
  function box(id) {
    const el = document.getElementById(id);
    if (!el) return null;
    const r = el.getBoundingClientRect();
    const svg = el.querySelector("svg");
    return {
      text: el.textContent.trim(),
      top: r.top + window.scrollY,
      height: r.height,
      svgHeight: svg ? svg.getBoundingClientRect().height : 0,
    };
  }
  function top(selector) {
    const el = document.querySelector(selector);
    return el ? el.getBoundingClientRect().top + window.scrollY : null;
  }
  return {
    innerWidth: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    decision: box("decision"),
    restoration: box("restoration"),
    forest: box("forest"),
    links: Array.from(document.querySelectorAll("a[href]")).map(function (a) {
      const id = a.hash ? decodeURIComponent(a.hash.slice(1)) : null;
      return { href: a.getAttribute("href"), url: a.href, anchored: id ? !!document.getElementById(id) : null };
    }),
    tables: Array.from(document.querySelectorAll(".table-scroll")).map(function (d) {
      return { scrollWidth: d.scrollWidth, clientWidth: d.clientWidth, overflowX: getComputedStyle(d).overflowX };
    }),
    plotsTop: top("section.plots"),
    appendixTop: top("#appendix"),
  };
})();
