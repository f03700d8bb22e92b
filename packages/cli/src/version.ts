/** The CLI's version, sent as its User-Agent and printed by `pier --version`. */
export const VERSION = '0.1.0';
