import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AuthClient as _auth_v1_AuthClient, AuthDefinition as _auth_v1_AuthDefinition } from './auth/v1/Auth.ts';
import type { AuthenticateRequest as _auth_v1_AuthenticateRequest, AuthenticateRequest__Output as _auth_v1_AuthenticateRequest__Output } from './auth/v1/AuthenticateRequest.ts';
import type { AuthenticateResponse as _auth_v1_AuthenticateResponse, AuthenticateResponse__Output as _auth_v1_AuthenticateResponse__Output } from './auth/v1/AuthenticateResponse.ts';
import type { FindVpcRequest as _auth_v1_FindVpcRequest, FindVpcRequest__Output as _auth_v1_FindVpcRequest__Output } from './auth/v1/FindVpcRequest.ts';
import type { FindVpcResponse as _auth_v1_FindVpcResponse, FindVpcResponse__Output as _auth_v1_FindVpcResponse__Output } from './auth/v1/FindVpcResponse.ts';
import type { RecordUsesRequest as _auth_v1_RecordUsesRequest, RecordUsesRequest__Output as _auth_v1_RecordUsesRequest__Output } from './auth/v1/RecordUsesRequest.ts';
import type { RecordUsesResponse as _auth_v1_RecordUsesResponse, RecordUsesResponse__Output as _auth_v1_RecordUsesResponse__Output } from './auth/v1/RecordUsesResponse.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  auth: {
    v1: {
      /**
       * Auth answers one question for the gateway on every request: who is this bearer token,
       * and what may they do where this path points.
       */
      Auth: SubtypeConstructor<typeof grpc.Client, _auth_v1_AuthClient> & { service: _auth_v1_AuthDefinition }
      AuthenticateRequest: MessageTypeDefinition<_auth_v1_AuthenticateRequest, _auth_v1_AuthenticateRequest__Output>
      AuthenticateResponse: MessageTypeDefinition<_auth_v1_AuthenticateResponse, _auth_v1_AuthenticateResponse__Output>
      FindVpcRequest: MessageTypeDefinition<_auth_v1_FindVpcRequest, _auth_v1_FindVpcRequest__Output>
      FindVpcResponse: MessageTypeDefinition<_auth_v1_FindVpcResponse, _auth_v1_FindVpcResponse__Output>
      RecordUsesRequest: MessageTypeDefinition<_auth_v1_RecordUsesRequest, _auth_v1_RecordUsesRequest__Output>
      RecordUsesResponse: MessageTypeDefinition<_auth_v1_RecordUsesResponse, _auth_v1_RecordUsesResponse__Output>
    }
  }
}

