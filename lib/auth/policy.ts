/**
 * Credential rules, in a module without Node imports so pages can show them. Longer passwords than
 * the maximum only cost CPU in argon2: no one types 1,024 characters.
 */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;
export const EMAIL_MAX_LENGTH = 254;
