import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedProtoTypes, PROTO_TYPES_DIR } from '../scripts/proto-types.ts';

// The services type their gRPC messages with packages/kit/src/proto; a .proto change
// without `pnpm proto:generate` would leave them typing the old messages.
describe('generated proto types', () => {
  it('packages/kit/src/proto is what `pnpm proto:generate` writes from proto/*.proto', () => {
    const committed: Record<string, string> = {};
    for (const rel of (readdirSync(PROTO_TYPES_DIR, { recursive: true }) as string[]).sort()) {
      if (rel.endsWith('.ts')) committed[rel] = readFileSync(path.join(PROTO_TYPES_DIR, rel), 'utf8');
    }
    const fresh = generatedProtoTypes();
    expect(Object.keys(fresh).length).toBeGreaterThan(0);
    expect(committed).toEqual(fresh);
  });
});
