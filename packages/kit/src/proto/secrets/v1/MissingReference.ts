// Original file: proto/secrets.proto


export interface MissingReference {
  'secret_id'?: (string);
  'key'?: (string);
  /**
   * `secret_not_found` or `key_not_found`
   */
  'reason'?: (string);
}

export interface MissingReference__Output {
  'secret_id': (string);
  'key': (string);
  /**
   * `secret_not_found` or `key_not_found`
   */
  'reason': (string);
}
