import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles, SDK_ROOT } from '../scripts/generated-files.ts';

describe('the committed SDK', () => {
  it('is what the current route declarations generate (else: pnpm sdk:generate, and commit)', async () => {
    for (const [file, contents] of Object.entries(await generatedFiles())) {
      const committed = await readFile(path.join(SDK_ROOT, file), 'utf8');
      expect(committed === contents, `packages/sdk/${file} is stale: run \`pnpm sdk:generate\` and commit the result`).toBe(true);
    }
  });
});
