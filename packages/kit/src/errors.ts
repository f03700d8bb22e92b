// Domain errors: stable codes, no transport in them. The edges (HTTP, gRPC) map them
// through the tables below, so a rule can be written once and spoken twice.

export type ErrorKind = 'invalid' | 'unauthenticated' | 'forbidden' | 'not_found' | 'conflict' | 'unprocessable' | 'too_large' | 'unavailable' | 'internal';

export class PierError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Stable machine-readable code, returned as `code` in every error body. */
    readonly code: string = kind,
    /** Extra fields returned beside `error` and `code` (for example the offending field). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'PierError';
  }
}

export class InputError extends PierError {
  constructor(message: string, code = 'invalid_request', details?: Record<string, unknown>) {
    super('invalid', message, code, details);
  }
}

export class AuthenticationError extends PierError {
  constructor(message = 'invalid or expired API key', code = 'unauthenticated') {
    super('unauthenticated', message, code);
  }
}

export class ForbiddenError extends PierError {
  constructor(message = 'insufficient workspace permissions', code = 'forbidden') {
    super('forbidden', message, code);
  }
}

export class NotFoundError extends PierError {
  constructor(message: string, code = 'not_found') {
    super('not_found', message, code);
  }
}

export class ConflictError extends PierError {
  constructor(message: string, code = 'conflict', details?: Record<string, unknown>) {
    super('conflict', message, code, details);
  }
}

/** A well-formed request that cannot be taken as asked (an idempotency key reused for another request). */
export class UnprocessableError extends PierError {
  constructor(message: string, code = 'unprocessable') {
    super('unprocessable', message, code);
  }
}

/** A request body over its limit (an upload, a JSON body). */
export class PayloadTooLargeError extends PierError {
  constructor(message: string, code = 'payload_too_large') {
    super('too_large', message, code);
  }
}

/** The cluster (or another dependency we cannot do without) cannot be reached. */
export class UnavailableError extends PierError {
  constructor(message: string, code = 'unavailable') {
    super('unavailable', message, code);
  }
}

export const httpStatusOf: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  too_large: 413,
  unavailable: 503,
  internal: 500,
};

// gRPC status numbers (grpc-js `status` enum values), kept here so the table is one place.
export const grpcStatusOf: Record<ErrorKind, number> = {
  invalid: 3, // INVALID_ARGUMENT
  unauthenticated: 16, // UNAUTHENTICATED
  forbidden: 7, // PERMISSION_DENIED
  not_found: 5, // NOT_FOUND
  conflict: 6, // ALREADY_EXISTS
  unprocessable: 9, // FAILED_PRECONDITION
  too_large: 8, // RESOURCE_EXHAUSTED
  unavailable: 14, // UNAVAILABLE
  internal: 13, // INTERNAL
};

export function kindOfGrpcStatus(code: number | undefined): ErrorKind {
  for (const [kind, status] of Object.entries(grpcStatusOf)) {
    if (status === code) return kind as ErrorKind;
  }
  // DEADLINE_EXCEEDED, CANCELLED, and connection failures all mean "could not reach it".
  if (code === 4 || code === 1) return 'unavailable';
  return 'internal';
}

/** The JSON body every error response carries. */
export function errorBody(err: PierError): Record<string, unknown> {
  return { error: err.message, code: err.code, ...err.details };
}
