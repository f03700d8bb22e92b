// Original file: proto/secrets.proto


export interface ResolvedValue {
  'secret_id'?: (string);
  'key'?: (string);
  'value'?: (string);
}

export interface ResolvedValue__Output {
  'secret_id': (string);
  'key': (string);
  'value': (string);
}
