// Original file: proto/secrets.proto


export interface SecretReference {
  'secret_id'?: (string);
  'key'?: (string);
}

export interface SecretReference__Output {
  'secret_id': (string);
  'key': (string);
}
