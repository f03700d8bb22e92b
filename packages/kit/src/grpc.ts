import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { PierError, grpcStatusOf, kindOfGrpcStatus, type ErrorKind } from './errors.ts';
import { pgErrorOf } from './pg-errors.ts';

export { grpc };

const PROTO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../proto');
const ERROR_CODE_KEY = 'pier-error-code';

/** Loads one of `proto/*.proto` and returns its package object (for example `auth.v1`). */
export function loadProto(file: string, pkg: string): grpc.GrpcObject {
  const def = protoLoader.loadSync(path.join(PROTO_DIR, file), {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  let obj: grpc.GrpcObject = grpc.loadPackageDefinition(def);
  for (const part of pkg.split('.')) obj = obj[part] as grpc.GrpcObject;
  return obj;
}

export function serviceDefinition(file: string, pkg: string, service: string): grpc.ServiceDefinition {
  const ctor = loadProto(file, pkg)[service] as grpc.ServiceClientConstructor;
  return ctor.service;
}

export function clientConstructor(file: string, pkg: string, service: string): grpc.ServiceClientConstructor {
  return loadProto(file, pkg)[service] as grpc.ServiceClientConstructor;
}

/** A domain error as a gRPC status, keeping its stable code in trailing metadata. */
export function toGrpcError(err: unknown): Partial<grpc.StatusObject> {
  const known = err instanceof PierError ? err : (pgErrorOf(err) ?? new PierError('internal', 'internal error', 'internal'));
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_CODE_KEY, known.code);
  return { code: grpcStatusOf[known.kind], details: known.message, metadata };
}

/** A gRPC failure back as a domain error, so the HTTP edge maps it with the same table. */
export function fromGrpcError(err: unknown): PierError {
  const e = err as grpc.ServiceError;
  const kind: ErrorKind = kindOfGrpcStatus(e?.code);
  const code = (e?.metadata?.get(ERROR_CODE_KEY)[0] as string | undefined) ?? (kind === 'unavailable' ? 'upstream_unavailable' : kind);
  const message = kind === 'internal' ? 'internal error' : e?.details || e?.message || 'upstream error';
  return new PierError(kind, message, code);
}

/** Wraps an async implementation as a grpc-js unary handler. */
export function unary<Req, Res>(fn: (req: Req, metadata: grpc.Metadata) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    fn(call.request, call.metadata).then(
      (res) => callback(null, res),
      (err) => callback(toGrpcError(err) as grpc.ServiceError),
    );
  };
}

/** Calls a unary method as a promise, translating failures to domain errors. */
export function call<Req, Res>(client: grpc.Client, method: string, req: Req, metadata = new grpc.Metadata(), timeoutMs = 5000): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method]!;
    fn.call(client, req, metadata, { deadline: Date.now() + timeoutMs }, (err: grpc.ServiceError | null, res: Res) => {
      if (err) reject(fromGrpcError(err));
      else resolve(res);
    });
  });
}

/** One gRPC service a server offers: the proto's definition and its handlers. */
export interface GrpcServiceDefinition {
  definition: grpc.ServiceDefinition;
  implementation: grpc.UntypedServiceImplementation;
}

/** Told of each answered unary call: its full method path, gRPC status name and duration. */
export type GrpcCallObserver = (method: string, code: string, seconds: number) => void;

export async function startGrpcServer(
  host: string,
  port: number,
  services: GrpcServiceDefinition[],
  observe?: GrpcCallObserver,
): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  for (const s of services) server.addService(s.definition, observe ? observed(s, observe) : s.implementation);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, port: bound };
}

/** The implementation with each unary handler timed: the callback it answers with reports the call. */
function observed(s: GrpcServiceDefinition, observe: GrpcCallObserver): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = { ...s.implementation };
  for (const [name, method] of Object.entries(s.definition)) {
    const handler = s.implementation[name];
    if (!handler || method.requestStream || method.responseStream) continue;
    const unaryHandler = handler as grpc.handleUnaryCall<unknown, unknown>;
    out[name] = ((call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const start = performance.now();
      unaryHandler(call, (err, ...rest) => {
        const code = err ? (grpc.status[err.code ?? grpc.status.UNKNOWN] ?? 'UNKNOWN') : 'OK';
        observe(method.path, code, (performance.now() - start) / 1000);
        callback(err, ...rest);
      });
    }) as grpc.handleUnaryCall<unknown, unknown>;
  }
  return out;
}

/**
 * A client interceptor that reports each call of the client it is given to: its full
 * method path, the status it ended with (a deadline or a refused connection included) and
 * how long it took. `new Ctor(address, credentials, { interceptors: [observingClient(o)] })`.
 */
export function observingClient(observe: GrpcCallObserver): grpc.Interceptor {
  return (options, nextCall) => {
    const start = performance.now();
    const method = options.method_definition.path;
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            observe(method, grpc.status[status.code] ?? 'UNKNOWN', (performance.now() - start) / 1000);
            nextStatus(status);
          },
        });
      },
    });
  };
}

export function stopGrpcServer(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => server.tryShutdown(() => resolve()));
}
