/* planted: fine */
