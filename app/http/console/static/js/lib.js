// Preact, its hooks and htm, as the page's classic scripts left them (vendor/*.umd.js: the
// hooks' ES module names Preact by a bare specifier, which only an inline import map resolves).
const { h, render } = globalThis.preact;

export const { useEffect, useId, useRef, useState } = globalThis.preactHooks;
export const html = globalThis.htm.bind(h);
export { render };
