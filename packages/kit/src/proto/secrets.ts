import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { CheckReferencesRequest as _secrets_v1_CheckReferencesRequest, CheckReferencesRequest__Output as _secrets_v1_CheckReferencesRequest__Output } from './secrets/v1/CheckReferencesRequest.ts';
import type { CheckReferencesResponse as _secrets_v1_CheckReferencesResponse, CheckReferencesResponse__Output as _secrets_v1_CheckReferencesResponse__Output } from './secrets/v1/CheckReferencesResponse.ts';
import type { MissingReference as _secrets_v1_MissingReference, MissingReference__Output as _secrets_v1_MissingReference__Output } from './secrets/v1/MissingReference.ts';
import type { ResolveReferencesRequest as _secrets_v1_ResolveReferencesRequest, ResolveReferencesRequest__Output as _secrets_v1_ResolveReferencesRequest__Output } from './secrets/v1/ResolveReferencesRequest.ts';
import type { ResolveReferencesResponse as _secrets_v1_ResolveReferencesResponse, ResolveReferencesResponse__Output as _secrets_v1_ResolveReferencesResponse__Output } from './secrets/v1/ResolveReferencesResponse.ts';
import type { ResolvedValue as _secrets_v1_ResolvedValue, ResolvedValue__Output as _secrets_v1_ResolvedValue__Output } from './secrets/v1/ResolvedValue.ts';
import type { SecretReference as _secrets_v1_SecretReference, SecretReference__Output as _secrets_v1_SecretReference__Output } from './secrets/v1/SecretReference.ts';
import type { SecretsClient as _secrets_v1_SecretsClient, SecretsDefinition as _secrets_v1_SecretsDefinition } from './secrets/v1/Secrets.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  secrets: {
    v1: {
      CheckReferencesRequest: MessageTypeDefinition<_secrets_v1_CheckReferencesRequest, _secrets_v1_CheckReferencesRequest__Output>
      CheckReferencesResponse: MessageTypeDefinition<_secrets_v1_CheckReferencesResponse, _secrets_v1_CheckReferencesResponse__Output>
      MissingReference: MessageTypeDefinition<_secrets_v1_MissingReference, _secrets_v1_MissingReference__Output>
      ResolveReferencesRequest: MessageTypeDefinition<_secrets_v1_ResolveReferencesRequest, _secrets_v1_ResolveReferencesRequest__Output>
      ResolveReferencesResponse: MessageTypeDefinition<_secrets_v1_ResolveReferencesResponse, _secrets_v1_ResolveReferencesResponse__Output>
      ResolvedValue: MessageTypeDefinition<_secrets_v1_ResolvedValue, _secrets_v1_ResolvedValue__Output>
      SecretReference: MessageTypeDefinition<_secrets_v1_SecretReference, _secrets_v1_SecretReference__Output>
      /**
       * What compute asks of the secrets service. Every call carries, in metadata
       * `x-pier-identity`, a short-lived token compute signs with its own Ed25519 key
       * (kind `service`, subject `compute`, issuer `pier-service`); secrets verifies it with
       * compute's public key and refuses any other caller (UNAUTHENTICATED for a bad token,
       * PERMISSION_DENIED for another identity).
       */
      Secrets: SubtypeConstructor<typeof grpc.Client, _secrets_v1_SecretsClient> & { service: _secrets_v1_SecretsDefinition }
    }
  }
}

