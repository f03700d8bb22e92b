import { main } from './program.ts';

main(process.argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`pier: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
