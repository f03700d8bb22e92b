import { z } from 'zod';
import { serviceEnv, port, loadConfig } from '@pier/kit';

export const computeEnv = serviceEnv
  .extend({
    PIER_COMPUTE_HTTP_PORT: port(7102),
    /** Which cluster runs the services: `docker` (one machine, the default) or `kubernetes`. */
    PIER_CLUSTER: z.enum(['docker', 'kubernetes']).default('docker'),
    /** docker: the Engine API, `unix:///var/run/docker.sock` (default) or `tcp://host:port`. */
    PIER_DOCKER_HOST: z
      .string()
      .regex(/^(unix|tcp):\/\/.+/, 'PIER_DOCKER_HOST must be unix:///path/to/docker.sock or tcp://host:port')
      .optional(),
    /** kubernetes: kubeconfig file; without it the in-cluster service account (or $KUBECONFIG) is used. */
    PIER_KUBECONFIG: z.string().min(1).optional(),
    /** The secrets service's gRPC address (host:port); without it secret references are refused (503). */
    PIER_SECRETS_GRPC_URL: z.string().min(1).optional(),
    /** Compute's own Ed25519 private JWK: signs the identity compute presents to the secrets service. */
    PIER_COMPUTE_SERVICE_PRIVATE_KEY: z.string().min(1).optional(),
    /** How often rollouts in progress are settled and teardowns finished without a read asking. */
    PIER_COMPUTE_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(2000),
    /** docker: how often the cron scheduler looks for due runs. */
    PIER_COMPUTE_CRON_INTERVAL_MS: z.coerce.number().int().min(100).default(5000),
  })
  .superRefine((env, ctx) => {
    if (env.PIER_SECRETS_GRPC_URL && !env.PIER_COMPUTE_SERVICE_PRIVATE_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['PIER_COMPUTE_SERVICE_PRIVATE_KEY'],
        message: 'PIER_COMPUTE_SERVICE_PRIVATE_KEY is required with PIER_SECRETS_GRPC_URL (compute signs its calls to secrets)',
      });
    }
  });

export type ComputeConfig = z.infer<typeof computeEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): ComputeConfig => loadConfig(computeEnv, env);
