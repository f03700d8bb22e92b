import { z } from 'zod';
import { serviceEnv, port, loadConfig } from '@pier/kit';

export const computeEnv = serviceEnv.extend({
  PIER_COMPUTE_HTTP_PORT: port(7102),
});

export type ComputeConfig = z.infer<typeof computeEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): ComputeConfig => loadConfig(computeEnv, env);
