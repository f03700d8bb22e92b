// `pnpm proto:generate`: regenerates packages/kit/src/proto from proto/*.proto. Run it after
// changing a .proto file and commit the output (packages/kit/test/proto-types.test.ts fails
// while the committed output is stale).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generatedProtoTypes, PROTO_TYPES_DIR } from './proto-types.ts';

rmSync(PROTO_TYPES_DIR, { recursive: true, force: true });
for (const [file, contents] of Object.entries(generatedProtoTypes())) {
  const target = path.join(PROTO_TYPES_DIR, file);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, contents);
  process.stdout.write(`wrote packages/kit/src/proto/${file}\n`);
}
