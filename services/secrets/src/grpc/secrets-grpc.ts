import { InputError, serviceDefinition, unary, type grpc } from '@pier/kit';
import type { CheckReferencesRequest__Output } from '@pier/kit/proto/secrets/v1/CheckReferencesRequest.ts';
import type { CheckReferencesResponse } from '@pier/kit/proto/secrets/v1/CheckReferencesResponse.ts';
import type { ResolveReferencesRequest__Output } from '@pier/kit/proto/secrets/v1/ResolveReferencesRequest.ts';
import type { ResolveReferencesResponse } from '@pier/kit/proto/secrets/v1/ResolveReferencesResponse.ts';
import type { SecretsContext } from '../domain/context.ts';
import type { Scope, SecretReference } from '../domain/records.ts';
import { checkReferences, resolveReferences } from '../domain/references.ts';
import type { CallerCheck } from './caller.ts';

export const PROTO_FILE = 'secrets.proto';
export const PROTO_PACKAGE = 'secrets.v1';
export const SERVICE_NAME = 'Secrets';

/** More references than any container could carry in its environment. */
const MAX_REFS = 1000;

/** CheckReferences and ResolveReferences ask the same (proto/secrets.proto; types generated in kit). */
export type ReferencesRequest = CheckReferencesRequest__Output | ResolveReferencesRequest__Output;

function parseRequest(req: ReferencesRequest): { scope: Scope; refs: SecretReference[] } {
  if (!req.workspace_id) throw new InputError('workspace_id is required', 'invalid_request', { field: 'workspace_id' });
  if (!req.vpc_id) throw new InputError('vpc_id is required', 'invalid_request', { field: 'vpc_id' });
  const refs = req.refs ?? [];
  if (refs.length > MAX_REFS) throw new InputError(`at most ${MAX_REFS} references per call`, 'invalid_request', { field: 'refs' });
  for (const [i, r] of refs.entries()) {
    if (!r.secret_id || !r.key) throw new InputError(`refs.${i}: secret_id and key are required`, 'invalid_request', { field: `refs.${i}` });
  }
  return {
    scope: { workspaceId: req.workspace_id, vpcId: req.vpc_id },
    refs: refs.map((r) => ({ secretId: r.secret_id, key: r.key })),
  };
}

export function secretsGrpcService(ctx: SecretsContext, caller: CallerCheck) {
  return {
    definition: serviceDefinition(PROTO_FILE, PROTO_PACKAGE, SERVICE_NAME),
    implementation: {
      CheckReferences: unary(async (req: ReferencesRequest, metadata: grpc.Metadata) => {
        await caller.admit(metadata);
        const { scope, refs } = parseRequest(req);
        const missing = await checkReferences(ctx, scope, refs);
        const res: CheckReferencesResponse = { missing: missing.map((m) => ({ secret_id: m.secretId, key: m.key, reason: m.reason })) };
        return res;
      }),
      ResolveReferences: unary(async (req: ReferencesRequest, metadata: grpc.Metadata) => {
        await caller.admit(metadata);
        const { scope, refs } = parseRequest(req);
        const values = await resolveReferences(ctx, scope, refs);
        const res: ResolveReferencesResponse = { values: values.map((v) => ({ secret_id: v.secretId, key: v.key, value: v.value })) };
        return res;
      }),
    },
  };
}
