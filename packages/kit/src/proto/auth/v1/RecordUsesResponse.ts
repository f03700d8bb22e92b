// Original file: proto/auth.proto


export interface RecordUsesResponse {
}

export interface RecordUsesResponse__Output {
}
