// Original file: proto/auth.proto


export interface RecordUsesRequest {
  'api_key_ids'?: (string)[];
  'session_ids'?: (string)[];
}

export interface RecordUsesRequest__Output {
  'api_key_ids': (string)[];
  'session_ids': (string)[];
}
