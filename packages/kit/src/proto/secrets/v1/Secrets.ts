// Original file: proto/secrets.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CheckReferencesRequest as _secrets_v1_CheckReferencesRequest, CheckReferencesRequest__Output as _secrets_v1_CheckReferencesRequest__Output } from '../../secrets/v1/CheckReferencesRequest.ts';
import type { CheckReferencesResponse as _secrets_v1_CheckReferencesResponse, CheckReferencesResponse__Output as _secrets_v1_CheckReferencesResponse__Output } from '../../secrets/v1/CheckReferencesResponse.ts';
import type { ResolveReferencesRequest as _secrets_v1_ResolveReferencesRequest, ResolveReferencesRequest__Output as _secrets_v1_ResolveReferencesRequest__Output } from '../../secrets/v1/ResolveReferencesRequest.ts';
import type { ResolveReferencesResponse as _secrets_v1_ResolveReferencesResponse, ResolveReferencesResponse__Output as _secrets_v1_ResolveReferencesResponse__Output } from '../../secrets/v1/ResolveReferencesResponse.ts';

/**
 * What compute asks of the secrets service. Every call carries, in metadata
 * `x-pier-identity`, a short-lived token compute signs with its own Ed25519 key
 * (kind `service`, subject `compute`, issuer `pier-service`); secrets verifies it with
 * compute's public key and refuses any other caller (UNAUTHENTICATED for a bad token,
 * PERMISSION_DENIED for another identity).
 */
export interface SecretsClient extends grpc.Client {
  /**
   * Which references do not resolve in the VPC. Used when env entries are saved, so a
   * reference to an unknown secret or key is refused up front. Never returns values.
   */
  CheckReferences(argument: _secrets_v1_CheckReferencesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  CheckReferences(argument: _secrets_v1_CheckReferencesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  CheckReferences(argument: _secrets_v1_CheckReferencesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  CheckReferences(argument: _secrets_v1_CheckReferencesRequest, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Which references do not resolve in the VPC. Used when env entries are saved, so a
   * reference to an unknown secret or key is refused up front. Never returns values.
   */
  checkReferences(argument: _secrets_v1_CheckReferencesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  checkReferences(argument: _secrets_v1_CheckReferencesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  checkReferences(argument: _secrets_v1_CheckReferencesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  checkReferences(argument: _secrets_v1_CheckReferencesRequest, callback: grpc.requestCallback<_secrets_v1_CheckReferencesResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The values of the references, for adapters that inject them at container start
   * (docker). Fails NOT_FOUND (code `missing_secret`, each missing reference named)
   * when any reference does not resolve; UNAVAILABLE when the store cannot be reached.
   */
  ResolveReferences(argument: _secrets_v1_ResolveReferencesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  ResolveReferences(argument: _secrets_v1_ResolveReferencesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  ResolveReferences(argument: _secrets_v1_ResolveReferencesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  ResolveReferences(argument: _secrets_v1_ResolveReferencesRequest, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The values of the references, for adapters that inject them at container start
   * (docker). Fails NOT_FOUND (code `missing_secret`, each missing reference named)
   * when any reference does not resolve; UNAVAILABLE when the store cannot be reached.
   */
  resolveReferences(argument: _secrets_v1_ResolveReferencesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  resolveReferences(argument: _secrets_v1_ResolveReferencesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  resolveReferences(argument: _secrets_v1_ResolveReferencesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  resolveReferences(argument: _secrets_v1_ResolveReferencesRequest, callback: grpc.requestCallback<_secrets_v1_ResolveReferencesResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * What compute asks of the secrets service. Every call carries, in metadata
 * `x-pier-identity`, a short-lived token compute signs with its own Ed25519 key
 * (kind `service`, subject `compute`, issuer `pier-service`); secrets verifies it with
 * compute's public key and refuses any other caller (UNAUTHENTICATED for a bad token,
 * PERMISSION_DENIED for another identity).
 */
export interface SecretsHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Which references do not resolve in the VPC. Used when env entries are saved, so a
   * reference to an unknown secret or key is refused up front. Never returns values.
   */
  CheckReferences: grpc.handleUnaryCall<_secrets_v1_CheckReferencesRequest__Output, _secrets_v1_CheckReferencesResponse>;
  
  /**
   * The values of the references, for adapters that inject them at container start
   * (docker). Fails NOT_FOUND (code `missing_secret`, each missing reference named)
   * when any reference does not resolve; UNAVAILABLE when the store cannot be reached.
   */
  ResolveReferences: grpc.handleUnaryCall<_secrets_v1_ResolveReferencesRequest__Output, _secrets_v1_ResolveReferencesResponse>;
  
}

export interface SecretsDefinition extends grpc.ServiceDefinition {
  CheckReferences: MethodDefinition<_secrets_v1_CheckReferencesRequest, _secrets_v1_CheckReferencesResponse, _secrets_v1_CheckReferencesRequest__Output, _secrets_v1_CheckReferencesResponse__Output>
  ResolveReferences: MethodDefinition<_secrets_v1_ResolveReferencesRequest, _secrets_v1_ResolveReferencesResponse, _secrets_v1_ResolveReferencesRequest__Output, _secrets_v1_ResolveReferencesResponse__Output>
}
