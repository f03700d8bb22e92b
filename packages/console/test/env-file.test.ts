import { describe, expect, it } from 'vitest';
import { parseEnvFile } from '../src/env-file.ts';

describe("the console's .env parser", () => {
  it('reads keys and values, skipping comments, blank lines and malformed lines', () => {
    const text = ['# a comment', '', 'A=1', 'export B = two words ', 'not a line', '1BAD=x', 'C=x # trailing comment', 'D='].join('\n');
    expect(parseEnvFile(text)).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: 'two words' },
      { key: 'C', value: 'x' },
      { key: 'D', value: '' },
    ]);
  });

  it('understands quotes: double with \\n, \\" and \\\\, single as they stand; a later key wins', () => {
    const text = 'Q="a\\nb \\"c\\" \\\\ # kept"\r\nS=\'$x # kept\'\nQ2="unterminated\nS=second';
    expect(parseEnvFile(text)).toEqual([
      { key: 'Q', value: 'a\nb "c" \\ # kept' },
      { key: 'S', value: 'second' },
      { key: 'Q2', value: 'unterminated' },
    ]);
  });
});
