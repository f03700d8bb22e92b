import { describe, expect, it } from 'vitest';
import { takeAccessToken } from '../src/http/access-token.ts';

describe('takeAccessToken', () => {
  it('takes the token out and leaves the other parameters exactly as written', () => {
    expect(takeAccessToken('tty=1&access_token=sk-abc&cmd=a%20b+c')).toEqual({ token: 'sk-abc', rest: 'tty=1&cmd=a%20b+c' });
    expect(takeAccessToken('access_token=abc%2Fdef')).toEqual({ token: 'abc/def', rest: '' });
    expect(takeAccessToken('a=1&b=2')).toEqual({ token: null, rest: 'a=1&b=2' });
    expect(takeAccessToken('')).toEqual({ token: null, rest: '' });
  });

  it('the first access_token wins and every copy is removed', () => {
    expect(takeAccessToken('access_token=one&x=1&access_token=two')).toEqual({ token: 'one', rest: 'x=1' });
  });

  it('a malformed escape is kept as written rather than failing', () => {
    expect(takeAccessToken('access_token=%zz')).toEqual({ token: '%zz', rest: '' });
  });
});
