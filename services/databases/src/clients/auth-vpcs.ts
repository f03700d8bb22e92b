import { call, clientConstructor, grpc, observingClient, UnavailableError, type GrpcCallObserver } from '@pier/kit';
import type { FindVpcRequest } from '@pier/kit/proto/auth/v1/FindVpcRequest.ts';
import type { FindVpcResponse__Output } from '@pier/kit/proto/auth/v1/FindVpcResponse.ts';
import type { VpcDirectory } from '../domain/vpc-directory.ts';

/** Auth's `FindVpc` (proto/auth.proto) as the databases service's VpcDirectory. */
export class GrpcVpcDirectory implements VpcDirectory {
  private readonly client: grpc.Client;

  constructor(
    address: string,
    private readonly timeoutMs = 5000,
    observe?: GrpcCallObserver,
  ) {
    const Ctor = clientConstructor('auth.proto', 'auth.v1', 'Auth');
    this.client = new Ctor(address, grpc.credentials.createInsecure(), { interceptors: observe ? [observingClient(observe)] : [] });
  }

  async isWorkspaceVpc(identityToken: string, vpcId: string): Promise<boolean> {
    const res = await call<FindVpcRequest, FindVpcResponse__Output>(
      this.client,
      'FindVpc',
      { identity_token: identityToken, vpc_id: vpcId },
      undefined,
      this.timeoutMs,
    );
    return res.found;
  }

  close(): void {
    this.client.close();
  }
}

/** Without auth's address only the source's own VPC can be a fork's target; asking about another says why not. */
export class UnconfiguredVpcDirectory implements VpcDirectory {
  async isWorkspaceVpc(): Promise<boolean> {
    throw new UnavailableError('a fork into another VPC needs auth to check the VPC, and PIER_AUTH_GRPC_URL is not set', 'auth_unavailable');
  }
}
