// Original file: proto/auth.proto


export interface AuthenticateRequest {
  /**
   * The bearer token exactly as sent: an API key (`sk-`), a JWT (has dots) or a CLI session token.
   */
  'token'?: (string);
  /**
   * Workspace and VPC named by the request path; empty when the path has none.
   */
  'workspace_id'?: (string);
  'vpc_id'?: (string);
}

export interface AuthenticateRequest__Output {
  /**
   * The bearer token exactly as sent: an API key (`sk-`), a JWT (has dots) or a CLI session token.
   */
  'token': (string);
  /**
   * Workspace and VPC named by the request path; empty when the path has none.
   */
  'workspace_id': (string);
  'vpc_id': (string);
}
