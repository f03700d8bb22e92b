// Original file: proto/auth.proto


export interface FindVpcResponse {
  'found'?: (boolean);
}

export interface FindVpcResponse__Output {
  'found': (boolean);
}
