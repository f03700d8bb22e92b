// Original file: proto/auth.proto


export interface FindVpcRequest {
  'identity_token'?: (string);
  'vpc_id'?: (string);
}

export interface FindVpcRequest__Output {
  'identity_token': (string);
  'vpc_id': (string);
}
