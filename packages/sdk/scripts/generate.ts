// `pnpm sdk:generate`: regenerates packages/sdk/openapi.json and src/schema.ts from the
// services' route declarations. Run it after adding or changing an endpoint; commit both.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generatedFiles, SDK_ROOT } from './generated-files.ts';

const started = performance.now();
for (const [file, contents] of Object.entries(await generatedFiles())) {
  await writeFile(path.join(SDK_ROOT, file), contents);
  process.stdout.write(`wrote packages/sdk/${file}\n`);
}
process.stdout.write(`in ${Math.round(performance.now() - started)} ms\n`);
