// Original file: /work/main/proto/auth.proto


export interface RecordUsesResponse {
}

export interface RecordUsesResponse__Output {
}
