import { readConfig } from './config.ts';
import { start } from './server.ts';

const running = await start(readConfig());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void running.stop().then(() => process.exit(0)));
}
