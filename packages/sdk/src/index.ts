export { createPierClient, unwrap, paginate, PierApiError, type PierClient, type PierClientOptions, type ApiErrorBody, type Page } from './client.ts';
export type { paths, components, operations } from './schema.ts';
export { retryingFetch, type RetryOptions } from './retry.ts';
export { LogResume, type LogLineIdentity } from './log-resume.ts';
