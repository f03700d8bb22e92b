// Original file: proto/secrets.proto

import type { ResolvedValue as _secrets_v1_ResolvedValue, ResolvedValue__Output as _secrets_v1_ResolvedValue__Output } from '../../secrets/v1/ResolvedValue.ts';

export interface ResolveReferencesResponse {
  /**
   * One per requested reference, in request order.
   */
  'values'?: (_secrets_v1_ResolvedValue)[];
}

export interface ResolveReferencesResponse__Output {
  /**
   * One per requested reference, in request order.
   */
  'values': (_secrets_v1_ResolvedValue__Output)[];
}
