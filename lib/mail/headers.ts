/**
 * The header the email action puts on everything it sends (value: the event id), so the inbound
 * receiver recognises this install's own mail coming back and does not fire on it again (a mail
 * loop: an email action addressed to an inbound alias). Kept apart from normalize so the action
 * does not load mailparser.
 */
export const LOOP_HEADER = "x-whenthen-event";
