/**
 * How long a running container has been up since its last (re)start, from the `Status`
 * text of Docker's container list ("Up 2 seconds", "Up About a minute (healthy)"): the list
 * carries no start time, and its `Created` stays put when the restart policy restarts a
 * crashing process, so a crash loop caught between two restarts would look long-lived.
 * Docker writes the text with go-units' HumanDuration; anything else gives null.
 */
export function uptimeMs(status: string): number | null {
  const m = /^Up (Less than a second|About a minute|About an hour|(\d+) (second|minute|hour|day|week|month|year)s?)\b/.exec(status);
  if (!m) return null;
  if (m[1] === 'Less than a second') return 0;
  if (m[1] === 'About a minute') return 60_000;
  if (m[1] === 'About an hour') return 3_600_000;
  const unit = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000, month: 2_592_000_000, year: 31_536_000_000 }[m[3]!]!;
  return Number(m[2]) * unit;
}
