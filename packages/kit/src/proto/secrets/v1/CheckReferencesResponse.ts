// Original file: proto/secrets.proto

import type { MissingReference as _secrets_v1_MissingReference, MissingReference__Output as _secrets_v1_MissingReference__Output } from '../../secrets/v1/MissingReference.ts';

export interface CheckReferencesResponse {
  'missing'?: (_secrets_v1_MissingReference)[];
}

export interface CheckReferencesResponse__Output {
  'missing': (_secrets_v1_MissingReference__Output)[];
}
