// The images a Dockerfile builds from, as the classic builder reads them, and references in
// the engine's own short form: what the docker adapter checks before a tenant's build or
// deploy reaches the engine (docker-image-access.ts). Pure functions, no engine.
import { describe, expect, it } from 'vitest';
import { dockerfileImages } from '../src/cluster/dockerfile-images.ts';
import { engineName, namesImage } from '../src/cluster/docker-image-access.ts';

describe('dockerfileImages', () => {
  it('reads FROM and COPY --from, leaving out scratch and earlier stages by name or index', () => {
    const text = [
      'FROM golang:1.22 AS build',
      'RUN go build -o /app .',
      'FROM build as test',
      'FROM scratch',
      'COPY --from=build /app /app',
      'COPY --from=0 /etc/ssl /etc/ssl',
      'COPY --from=Test /x /x',
      'COPY --from=pier/tools:1 /bin/tool /bin/tool',
    ].join('\n');
    expect(dockerfileImages(text)).toEqual(['golang:1.22', 'pier/tools:1']);
  });

  it('substitutes global ARG defaults in FROM, with the forms the builder takes', () => {
    const text = [
      'ARG BASE=pier/tiny-http',
      'ARG TAG',
      'ARG FULL="${BASE}:2"',
      'FROM ${BASE}:${TAG:-1}',
      'FROM $FULL AS second',
      'FROM ${UNSET:-debian}:${TAG:+never}bookworm',
      'ARG BASE=ignored-after-from',
      'FROM ${BASE}',
    ].join('\n');
    expect(dockerfileImages(text)).toEqual(['pier/tiny-http:1', 'pier/tiny-http:2', 'debian:bookworm', 'pier/tiny-http']);
  });

  it('joins continuations (with the escape directive), skips comments inside them, and takes --platform', () => {
    const text = ['# escape=`', 'FROM --platform=linux/amd64 `', '# a comment in between', '', '  pier/tiny-http:1 `', '  AS web'].join('\n');
    expect(dockerfileImages(text)).toEqual(['pier/tiny-http:1']);
    expect(dockerfileImages('from \\\n  f8\nrun true')).toEqual(['f8']);
  });

  it('refuses what it cannot read as the builder would: a variable in COPY --from, ONBUILD COPY --from, an empty FROM', () => {
    expect(() => dockerfileImages('FROM a\nARG X=b\nCOPY --from=$X /a /a')).toThrow(/without a variable/);
    expect(() => dockerfileImages('FROM a\nONBUILD COPY --from=f8 / /')).toThrow(/ONBUILD COPY --from is not supported/);
    expect(() => dockerfileImages('ARG X\nFROM ${X}')).toThrow(/FROM names no image/);
    expect(() => dockerfileImages('FROM ${X:?}')).toThrow(/unsupported substitution/);
  });
});

describe("references in the engine's short form", () => {
  it("drops Docker Hub's domain and library/, and adds :latest", () => {
    expect(engineName('nginx')).toEqual({ tag: 'nginx:latest' });
    expect(engineName('docker.io/library/nginx:1')).toEqual({ tag: 'nginx:1' });
    expect(engineName('index.docker.io/pier-build/abc:1')).toEqual({ tag: 'pier-build/abc:1' });
    expect(engineName('localhost:5000/app')).toEqual({ tag: 'localhost:5000/app:latest' });
    expect(engineName('registry.example/library/app:2')).toEqual({ tag: 'registry.example/library/app:2' });
    expect(engineName(`app:1@sha256:${'a'.repeat(64)}`)).toEqual({ digest: `app@sha256:${'a'.repeat(64)}` });
  });

  it('names an image only by one of its tags or digests, never by a prefix of its ID', () => {
    const image = { RepoTags: ['pier/tiny-http:1'], RepoDigests: [] };
    expect(namesImage('pier/tiny-http:1', image)).toBe(true);
    expect(namesImage('docker.io/pier/tiny-http:1', image)).toBe(true);
    expect(namesImage('f8619', image)).toBe(false);
    expect(namesImage('pier/tiny-http', image)).toBe(false);
  });
});
