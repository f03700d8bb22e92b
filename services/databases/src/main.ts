import { runMain } from '@pier/kit';
import { readConfig } from './config.ts';
import { start } from './server.ts';

runMain('databases', () => start(readConfig()));
