// Original file: proto/auth.proto

import type { Long } from '@grpc/proto-loader';

export interface AuthenticateResponse {
  'user_id'?: (string);
  'email'?: (string);
  /**
   * owner, admin, developer or viewer in workspace_id; empty when no workspace was asked.
   */
  'role'?: (string);
  /**
   * Short-lived EdDSA token the gateway forwards to the owning service.
   */
  'identity_token'?: (string);
  /**
   * Seconds until identity_token expires.
   */
  'expires_in'?: (number);
  /**
   * Until when (Unix ms) a gateway may reuse this answer for the same token, workspace and
   * VPC, and under which auth epoch: 0 when it may not (an OIDC JWT). Every change that
   * could alter an answer (revoke, role change, removal, VPC deletion) raises the epoch,
   * and a gateway reuses an answer only while its epoch is current (see the gateway's
   * auth-cache.ts). The expiry of the key or session and half the identity token's
   * remaining life bound it.
   */
  'cache_until_ms'?: (number | string | Long);
  'epoch'?: (number | string | Long);
  /**
   * The API key or CLI session that was used (one of them), for RecordUses.
   */
  'api_key_id'?: (string);
  'session_id'?: (string);
  /**
   * The Pier installation whose epoch `epoch` is (a gateway follows that installation's ticks).
   */
  'installation'?: (string);
}

export interface AuthenticateResponse__Output {
  'user_id': (string);
  'email': (string);
  /**
   * owner, admin, developer or viewer in workspace_id; empty when no workspace was asked.
   */
  'role': (string);
  /**
   * Short-lived EdDSA token the gateway forwards to the owning service.
   */
  'identity_token': (string);
  /**
   * Seconds until identity_token expires.
   */
  'expires_in': (number);
  /**
   * Until when (Unix ms) a gateway may reuse this answer for the same token, workspace and
   * VPC, and under which auth epoch: 0 when it may not (an OIDC JWT). Every change that
   * could alter an answer (revoke, role change, removal, VPC deletion) raises the epoch,
   * and a gateway reuses an answer only while its epoch is current (see the gateway's
   * auth-cache.ts). The expiry of the key or session and half the identity token's
   * remaining life bound it.
   */
  'cache_until_ms': (number);
  'epoch': (number);
  /**
   * The API key or CLI session that was used (one of them), for RecordUses.
   */
  'api_key_id': (string);
  'session_id': (string);
  /**
   * The Pier installation whose epoch `epoch` is (a gateway follows that installation's ticks).
   */
  'installation': (string);
}
