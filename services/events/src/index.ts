export { start, type StartOptions, type RunningEvents } from './server.ts';
export { readConfig, eventsEnv, type EventsConfig } from './config.ts';
export { eventsRoutes } from './app.ts';
