// xterm.js for the browser shell. Loaded with import() when a shell is opened, so neither
// xterm nor its CSS is in the first load (the build's initial-JS figure leaves them out).
//
// The gateway's Content-Security-Policy is `style-src 'self'`: xterm's own stylesheet comes
// as a file (imported below, so Vite emits it as an asset loaded by a <link>), but xterm's
// DOM renderer also writes a few rules (its theme colours, row sizes, the scrollbar) into
// <style> elements it creates, which that policy blocks. A constructed stylesheet
// (`new CSSStyleSheet()`, adopted by the document) is not inline markup and is allowed; so
// while this module is loaded, a <style> element the page creates is an inert <template>
// whose text goes to such a sheet. Nothing else in the console creates <style> elements.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';

function adoptedStyleElement(create: Document['createElement']): HTMLElement {
  const el = create.call(document, 'template');
  const sheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  let text = '';
  Object.defineProperty(el, 'textContent', {
    get: () => text,
    set: (v: string | null) => {
      text = v ?? '';
      sheet.replaceSync(text);
    },
  });
  const remove = el.remove.bind(el);
  el.remove = () => {
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
    remove();
  };
  return el;
}

let patched = false;
function routeStyleElementsToSheets(): void {
  if (patched) return;
  patched = true;
  const create = document.createElement;
  document.createElement = function (this: Document, tag: string, options?: ElementCreationOptions) {
    return tag.toLowerCase() === 'style' ? adoptedStyleElement(create) : create.call(this, tag, options);
  } as Document['createElement'];
}

export interface OpenTerminal {
  term: Terminal;
  /** Fits the terminal to its box (the box's size changed). */
  fit: () => void;
  dispose: () => void;
}

/**
 * A terminal in `box`. `leave` runs on F6, which moves the focus out (inside the terminal,
 * Tab belongs to the shell: completion).
 */
export function openTerminal(box: HTMLElement, leave: () => void): OpenTerminal {
  routeStyleElementsToSheets();
  const term = new Terminal({ cursorBlink: true, fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 14, scrollback: 5000 });
  const fitAddon = new FitAddon();
  term.loadAddon(fitAddon);
  term.attachCustomKeyEventHandler((e) => {
    if (e.key !== 'F6') return true;
    if (e.type === 'keydown') leave();
    return false;
  });
  term.open(box);
  const fit = () => {
    if (box.clientWidth > 0) fitAddon.fit();
  };
  fit();
  const observer = new ResizeObserver(() => fit());
  observer.observe(box);
  return {
    term,
    fit,
    dispose: () => {
      observer.disconnect();
      term.dispose();
    },
  };
}
