import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';

// The SDK keys every write with crypto.randomUUID, which browsers give secure contexts
// only (https, localhost): a console opened over plain http on another address gets the
// same RFC 4122 version 4 UUID from getRandomValues.
if (typeof crypto.randomUUID !== 'function') {
  Object.defineProperty(crypto, 'randomUUID', {
    value: () => {
      const b = crypto.getRandomValues(new Uint8Array(16));
      b[6] = (b[6]! & 0x0f) | 0x40;
      b[8] = (b[8]! & 0x3f) | 0x80;
      const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
  });
}

render(<App />, document.getElementById('app')!);
