// Original file: proto/auth.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AuthenticateRequest as _auth_v1_AuthenticateRequest, AuthenticateRequest__Output as _auth_v1_AuthenticateRequest__Output } from '../../auth/v1/AuthenticateRequest.ts';
import type { AuthenticateResponse as _auth_v1_AuthenticateResponse, AuthenticateResponse__Output as _auth_v1_AuthenticateResponse__Output } from '../../auth/v1/AuthenticateResponse.ts';
import type { FindVpcRequest as _auth_v1_FindVpcRequest, FindVpcRequest__Output as _auth_v1_FindVpcRequest__Output } from '../../auth/v1/FindVpcRequest.ts';
import type { FindVpcResponse as _auth_v1_FindVpcResponse, FindVpcResponse__Output as _auth_v1_FindVpcResponse__Output } from '../../auth/v1/FindVpcResponse.ts';
import type { RecordUsesRequest as _auth_v1_RecordUsesRequest, RecordUsesRequest__Output as _auth_v1_RecordUsesRequest__Output } from '../../auth/v1/RecordUsesRequest.ts';
import type { RecordUsesResponse as _auth_v1_RecordUsesResponse, RecordUsesResponse__Output as _auth_v1_RecordUsesResponse__Output } from '../../auth/v1/RecordUsesResponse.ts';

/**
 * Auth answers one question for the gateway on every request: who is this bearer token,
 * and what may they do where this path points.
 */
export interface AuthClient extends grpc.Client {
  Authenticate(argument: _auth_v1_AuthenticateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  Authenticate(argument: _auth_v1_AuthenticateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  Authenticate(argument: _auth_v1_AuthenticateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  Authenticate(argument: _auth_v1_AuthenticateRequest, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _auth_v1_AuthenticateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _auth_v1_AuthenticateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _auth_v1_AuthenticateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _auth_v1_AuthenticateRequest, callback: grpc.requestCallback<_auth_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Whether a VPC belongs to the caller's workspace, asked by a resource service on the
   * caller's behalf (a database forked into another VPC). The request carries the identity
   * token auth issued for the caller's request, so auth answers for that token's
   * workspace only (UNAUTHENTICATED for a token it did not issue, or one of no workspace).
   */
  FindVpc(argument: _auth_v1_FindVpcRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  FindVpc(argument: _auth_v1_FindVpcRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  FindVpc(argument: _auth_v1_FindVpcRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  FindVpc(argument: _auth_v1_FindVpcRequest, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Whether a VPC belongs to the caller's workspace, asked by a resource service on the
   * caller's behalf (a database forked into another VPC). The request carries the identity
   * token auth issued for the caller's request, so auth answers for that token's
   * workspace only (UNAUTHENTICATED for a token it did not issue, or one of no workspace).
   */
  findVpc(argument: _auth_v1_FindVpcRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  findVpc(argument: _auth_v1_FindVpcRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  findVpc(argument: _auth_v1_FindVpcRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  findVpc(argument: _auth_v1_FindVpcRequest, callback: grpc.requestCallback<_auth_v1_FindVpcResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Uses of API keys and CLI sessions that a gateway answered from its cache of
   * Authenticate answers (so without calling Authenticate): they count for last_used_at.
   */
  RecordUses(argument: _auth_v1_RecordUsesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  RecordUses(argument: _auth_v1_RecordUsesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  RecordUses(argument: _auth_v1_RecordUsesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  RecordUses(argument: _auth_v1_RecordUsesRequest, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Uses of API keys and CLI sessions that a gateway answered from its cache of
   * Authenticate answers (so without calling Authenticate): they count for last_used_at.
   */
  recordUses(argument: _auth_v1_RecordUsesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  recordUses(argument: _auth_v1_RecordUsesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  recordUses(argument: _auth_v1_RecordUsesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  recordUses(argument: _auth_v1_RecordUsesRequest, callback: grpc.requestCallback<_auth_v1_RecordUsesResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * Auth answers one question for the gateway on every request: who is this bearer token,
 * and what may they do where this path points.
 */
export interface AuthHandlers extends grpc.UntypedServiceImplementation {
  Authenticate: grpc.handleUnaryCall<_auth_v1_AuthenticateRequest__Output, _auth_v1_AuthenticateResponse>;
  
  /**
   * Whether a VPC belongs to the caller's workspace, asked by a resource service on the
   * caller's behalf (a database forked into another VPC). The request carries the identity
   * token auth issued for the caller's request, so auth answers for that token's
   * workspace only (UNAUTHENTICATED for a token it did not issue, or one of no workspace).
   */
  FindVpc: grpc.handleUnaryCall<_auth_v1_FindVpcRequest__Output, _auth_v1_FindVpcResponse>;
  
  /**
   * Uses of API keys and CLI sessions that a gateway answered from its cache of
   * Authenticate answers (so without calling Authenticate): they count for last_used_at.
   */
  RecordUses: grpc.handleUnaryCall<_auth_v1_RecordUsesRequest__Output, _auth_v1_RecordUsesResponse>;
  
}

export interface AuthDefinition extends grpc.ServiceDefinition {
  Authenticate: MethodDefinition<_auth_v1_AuthenticateRequest, _auth_v1_AuthenticateResponse, _auth_v1_AuthenticateRequest__Output, _auth_v1_AuthenticateResponse__Output>
  FindVpc: MethodDefinition<_auth_v1_FindVpcRequest, _auth_v1_FindVpcResponse, _auth_v1_FindVpcRequest__Output, _auth_v1_FindVpcResponse__Output>
  RecordUses: MethodDefinition<_auth_v1_RecordUsesRequest, _auth_v1_RecordUsesResponse, _auth_v1_RecordUsesRequest__Output, _auth_v1_RecordUsesResponse__Output>
}
