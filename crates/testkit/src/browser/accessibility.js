// What makes a page hard to use without a mouse or a screen (testkit::browser::Browser::
// assert_accessible): run by WebDriver, it returns one line per problem.
const problems = [];
const named = (el) => {
  if ((el.getAttribute("aria-label") || "").trim()) return true;
  const by = el.getAttribute("aria-labelledby");
  if (by && by.split(/\s+/).some((id) => (document.getElementById(id)?.textContent || "").trim())) return true;
  return false;
};
const describe = (el) => el.outerHTML.slice(0, 120);
if (!document.documentElement.lang) problems.push("the page has no lang");
if (!document.title.trim()) problems.push("the page has no title");
const h1 = document.querySelectorAll("h1").length;
if (h1 !== 1) problems.push(`the page has ${h1} h1 headings`);
for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
  if (el.labels && el.labels.length) continue;
  if (named(el)) continue;
  if (el.type === "submit" && (el.value || "").trim()) continue;
  problems.push(`a form control without a label: ${describe(el)}`);
}
for (const el of document.querySelectorAll("button, a[href]")) {
  if ((el.textContent || "").trim() || named(el) || el.querySelector("img[alt]:not([alt=''])")) continue;
  problems.push(`a control without a name: ${describe(el)}`);
}
for (const el of document.querySelectorAll("img")) {
  if (!el.hasAttribute("alt")) problems.push(`an image without alt: ${describe(el)}`);
}
for (const el of document.querySelectorAll("svg")) {
  if (el.closest("[aria-hidden=true]")) continue;
  if (el.getAttribute("role") === "img" && named(el)) continue;
  if (el.querySelector("title")) continue;
  problems.push(`an svg without a name: ${describe(el)}`);
}
for (const el of document.querySelectorAll("table")) {
  if (!el.querySelector("th")) problems.push(`a table without header cells: ${describe(el)}`);
}
for (const el of document.querySelectorAll("[tabindex]")) {
  if (Number(el.getAttribute("tabindex")) > 0) problems.push(`a positive tabindex: ${describe(el)}`);
}
return problems;
