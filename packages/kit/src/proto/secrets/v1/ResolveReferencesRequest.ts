// Original file: proto/secrets.proto

import type { SecretReference as _secrets_v1_SecretReference, SecretReference__Output as _secrets_v1_SecretReference__Output } from '../../secrets/v1/SecretReference.ts';

export interface ResolveReferencesRequest {
  'workspace_id'?: (string);
  'vpc_id'?: (string);
  'refs'?: (_secrets_v1_SecretReference)[];
}

export interface ResolveReferencesRequest__Output {
  'workspace_id': (string);
  'vpc_id': (string);
  'refs': (_secrets_v1_SecretReference__Output)[];
}
