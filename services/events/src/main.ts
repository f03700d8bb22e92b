import { runMain } from '@pier/kit';
import { readConfig } from './config.ts';
import { start } from './server.ts';

runMain('events', () => start(readConfig()));
