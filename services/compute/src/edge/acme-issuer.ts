// Certificates from an ACME directory (Let's Encrypt in production, Pebble in tests) over
// HTTP-01. Pier runs the protocol itself rather than leaving it to the proxy, so a failure
// comes back as a sentence for the domain's record, and the caller decides when to retry.
import https from 'node:https';
import * as acme from 'acme-client';

export interface AcmeSettings {
  directoryUrl: string;
  /** Contact for the account (expiry notices from the CA); optional. */
  email?: string;
  /** PEM of a CA to trust for the directory's own TLS (a private ACME server such as Pebble). */
  caPem?: string;
  /** An issuance taking longer fails. */
  timeoutMs: number;
}

/** How the challenge token is put where the CA will look for it (the edge serves it). */
export interface Http01Responder {
  present(hostname: string, token: string, keyAuthorization: string): Promise<void>;
  remove(hostname: string, token: string): Promise<void>;
}

/**
 * Where the ACME account's key is kept: one account for the platform, across restarts (a CA
 * limits how many accounts an address may register).
 */
export interface AccountKeyStore {
  load(): Promise<string | null>;
  save(pem: string): Promise<void>;
}

export interface IssuedCertificate {
  certificatePem: string;
  keyPem: string;
  issuer: string;
  expiresAt: Date;
}

export class AcmeIssuer {
  private client?: Promise<acme.Client>;

  constructor(private readonly settings: AcmeSettings) {
    // acme-client talks through one shared axios instance: trust the directory's CA there.
    if (settings.caPem) acme.axios.defaults.httpsAgent = new https.Agent({ ca: settings.caPem });
  }

  /** The account, its key read from (or, the first time, made and saved to) `keys`; registered on first use. */
  private account(keys: AccountKeyStore): Promise<acme.Client> {
    this.client ??= (async () => {
      let accountKey = await keys.load();
      if (!accountKey) {
        accountKey = (await acme.crypto.createPrivateKey()).toString();
        await keys.save(accountKey);
      }
      return new acme.Client({ directoryUrl: this.settings.directoryUrl, accountKey });
    })();
    return this.client;
  }

  async issue(hostname: string, responder: Http01Responder, keys: AccountKeyStore): Promise<IssuedCertificate> {
    const run = async () => {
      const client = await this.account(keys);
      const [key, csr] = await acme.crypto.createCsr({ commonName: hostname, altNames: [hostname] });
      const certificatePem = await client.auto({
        csr,
        email: this.settings.email,
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // acme-client would fetch the token itself first, through this machine's DNS; the
        // CA's own validation is the one that counts.
        skipChallengeVerification: true,
        challengeCreateFn: (_authz, challenge, keyAuthorization) => responder.present(hostname, challenge.token, keyAuthorization),
        challengeRemoveFn: (_authz, challenge) => responder.remove(hostname, challenge.token),
      });
      const info = acme.crypto.readCertificateInfo(certificatePem);
      return { certificatePem, keyPem: key.toString(), issuer: info.issuer.commonName ?? 'unknown', expiresAt: info.notAfter };
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the ACME server did not issue within ${this.settings.timeoutMs / 1000} s`)), this.settings.timeoutMs);
    });
    try {
      return await Promise.race([run(), timeout]);
    } catch (err) {
      // A failed account registration (the directory unreachable) is tried again next time.
      this.client = undefined;
      throw new Error(acmeReason(err), { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The CA's own words when it gave any (problem documents carry `detail`), else the error's. */
function acmeReason(err: unknown): string {
  const e = err as { response?: { data?: { detail?: string } }; message?: string; code?: string };
  const detail = e?.response?.data?.detail ?? e?.message ?? String(err);
  return e?.code && !detail.includes(e.code) ? `${detail} (${e.code})` : detail;
}
