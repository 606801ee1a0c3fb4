/* planted: fine inside net */
